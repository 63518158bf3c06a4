package mysql

// The socket of sock.go against a plain TCP peer on 127.0.0.1 (no database: these run in the
// fast tier too).

import (
	"bytes"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

// pair dials a listener on 127.0.0.1 and returns our socket and the accepted peer; with small,
// both sockets' buffers are as small as the kernel allows (the peer's before the handshake, so
// that the window it offers is small too).
func pair(t *testing.T, small bool) (*deferredConn, *net.TCPConn) {
	t.Helper()
	var lc net.ListenConfig
	if small {
		lc.Control = func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) {
				_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024)
			})
		}
	}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tc := nc.(*net.TCPConn)
	if small {
		_ = tc.SetWriteBuffer(1024)
	}
	c, err := newDeferredConn(tc)
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	return c.(*deferredConn), peer.(*net.TCPConn)
}

// wantReply reads from our socket (within 5 s) and fails unless it gets want.
func wantReply(t *testing.T, c *deferredConn, want, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != want {
		t.Fatalf("Read: %q, %v; want %s", buf[:n], err, what)
	}
}

// received reads what the peer has within d.
func received(t *testing.T, peer net.Conn, d time.Duration) []byte {
	t.Helper()
	_ = peer.SetReadDeadline(time.Now().Add(d))
	var got []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := peer.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			return got
		}
	}
}

// TestRequestGoesOutWithTheRead: a small request waits for the Read, which sends it and
// returns the reply; removing the deferral (a write in Write) fails the first check.
func TestRequestGoesOutWithTheRead(t *testing.T) {
	c, peer := pair(t, false)
	if _, err := c.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	if got := received(t, peer, 100*time.Millisecond); len(got) != 0 {
		t.Fatalf("the peer got %q before the Read; a request should leave with the Read", got)
	}
	go func() {
		got := make([]byte, len("request"))
		_ = peer.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.ReadFull(peer, got); err == nil && string(got) == "request" {
			_, _ = peer.Write([]byte("reply"))
		}
	}()
	wantReply(t, c, "reply", "the peer's reply to exactly our request")
}

// TestNoReplyIsLost: many round trips with a peer that answers at once, from a thread of its
// own (blocking system calls, as a server process would), while other goroutines keep the
// scheduler polling the network. A reply whose readable mark was taken before our wait began
// would leave the Read waiting forever: the deadline would end the test with an error. (A
// mutation that writes before the RawConn.Read, sleeps a millisecond, and skips the first
// read fails here on its deadline.)
func TestNoReplyIsLost(t *testing.T) {
	c, peer := pair(t, false)
	const rounds = 20000
	f, err := peer.File() // a blocking duplicate of the peer's socket
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	go func() {
		runtime.LockOSThread()
		buf := make([]byte, 64)
		for {
			n, err := syscall.Read(int(f.Fd()), buf)
			if err != nil || n <= 0 {
				return
			}
			if _, err := syscall.Write(int(f.Fd()), buf[:n]); err != nil {
				return
			}
		}
	}()
	stop := make(chan struct{})
	defer close(stop)
	for i := 0; i < 2; i++ { // goroutines that sleep and wake: the scheduler polls in between
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Microsecond):
				}
			}
		}()
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 64)
	msg := []byte("0123456789")
	for i := 0; i < rounds; i++ {
		msg[0] = byte('a' + i%26)
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		got := 0
		for got < len(msg) {
			n, err := c.Read(buf[got:])
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
			got += n
		}
		if !bytes.Equal(buf[:got], msg) {
			t.Fatalf("round %d: got %q, want %q", i, buf[:got], msg)
		}
	}
}

// TestRoundTripDoesNotAllocate: a statement's write and read allocate nothing on the heap. The
// RawConn.Read callback is made once per connection and the read's state lives in the
// connection: a closure made per Read escapes through RawConn's interface (five allocations
// per statement, which the collector then has to sweep at tens of thousands per second).
func TestRoundTripDoesNotAllocate(t *testing.T) {
	c, peer := pair(t, false)
	go func() { _, _ = io.Copy(peer, peer) }() // echo
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	msg := []byte("0123456789")
	buf := make([]byte, 64)
	trip := func() {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < len(msg); {
			n, err := c.Read(buf[got:])
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	}
	trip() // the buffers grow once
	if a := testing.AllocsPerRun(2000, trip); a != 0 {
		t.Fatalf("a round trip allocates %.2f times on average, want 0", a)
	}
}

// TestCloseSendsWhatIsPending: go-sql-driver writes COM_QUIT and closes without reading.
func TestCloseSendsWhatIsPending(t *testing.T) {
	c, peer := pair(t, false)
	if _, err := c.Write([]byte("quit")); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := received(t, peer, 2*time.Second); string(got) != "quit" {
		t.Fatalf("the peer got %q, want what was pending at Close (quit)", got)
	}
}

// TestLargeWriteGoesAtOnceInOrder: more than deferMax goes out in Write, after what is pending.
func TestLargeWriteGoesAtOnceInOrder(t *testing.T) {
	c, peer := pair(t, false)
	big := bytes.Repeat([]byte("b"), deferMax+1)
	want := append([]byte("small"), big...)
	done := make(chan []byte, 1)
	go func() { done <- received(t, peer, 500*time.Millisecond) }()
	if _, err := c.Write([]byte("small")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(big); err != nil {
		t.Fatal(err)
	}
	if got := <-done; !bytes.Equal(got, want) {
		t.Fatalf("the peer got %d bytes (first %q), want %d: the small request, then the large one, without a Read", len(got), got[:min(len(got), 8)], len(want))
	}
}

// TestFullSendBufferWaitsForRoom: a request the socket's buffer cannot take at once (the peer
// is slow to read) goes out whole and in order through net.TCPConn's Write, which waits.
func TestFullSendBufferWaitsForRoom(t *testing.T) {
	c, peer := pair(t, true)
	req := make([]byte, deferMax)
	for i := range req {
		req[i] = byte(i % 251)
	}
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond) // let the Read fill the buffer first
		got := make([]byte, len(req))
		_ = peer.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(peer, got); err != nil || !bytes.Equal(got, req) {
			return // no reply: the Read below fails on its deadline
		}
		_, _ = peer.Write([]byte("ok"))
	}()
	wantReply(t, c, "ok", "ok (the peer checks it got the whole request in order)")
	if c.full == 0 {
		t.Fatal("the send buffer never filled: this test did not reach the path it is for")
	}
}

// TestDeadlineBeforeSendSendsNothing: a canceled statement's deadline in the past ends the
// Read before the request leaves: nothing is sent and the connection says so.
func TestDeadlineBeforeSendSendsNothing(t *testing.T) {
	c, peer := pair(t, false)
	if _, err := c.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Unix(1, 0))
	_, err := c.Read(make([]byte, 8))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read with a past deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	if !c.nothingSent() {
		t.Fatal("nothingSent() = false for a request that never left")
	}
	if got := received(t, peer, 100*time.Millisecond); len(got) != 0 {
		t.Fatalf("the peer got %q", got)
	}
}

// TestResetPeerIsNothingSentAndRetried: a request to a peer that reset the connection is not
// written at all; the driver reports that as driver.ErrBadConn (database/sql retries it on a
// new connection, as go-sql-driver's first write that sent nothing), and inside a transaction
// as 2013.
func TestResetPeerIsNothingSentAndRetried(t *testing.T) {
	c, peer := pair(t, false)
	_ = peer.SetLinger(0)
	peer.Close() // RST
	time.Sleep(50 * time.Millisecond)
	if _, err := c.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 8)); err == nil {
		t.Fatal("Read after the peer's reset: no error")
	}
	if !c.nothingSent() {
		t.Fatal("nothingSent() = false after a write the reset refused")
	}
	conn := &Conn{sock: c}
	if err := conn.failed(gomysql.ErrInvalidConn); !errors.Is(err, driver.ErrBadConn) {
		t.Fatalf("failed(ErrInvalidConn) with nothing sent = %v, want driver.ErrBadConn", err)
	}
	conn.inTx = true
	var me *gomysql.MySQLError
	if err := conn.failed(gomysql.ErrInvalidConn); !errors.As(err, &me) || me.Number != 2013 {
		t.Fatalf("inside a transaction: %v, want 2013", err)
	}
	// a request that left is never reported as unsent
	c2, peer2 := pair(t, false)
	if _, err := c2.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	go func() { _ = received(t, peer2, 200*time.Millisecond); peer2.Close() }()
	if _, err := c2.Read(make([]byte, 8)); err != io.EOF {
		t.Fatalf("Read from a peer that closed after our request: %v, want io.EOF", err)
	}
	if c2.nothingSent() || (&Conn{sock: c2}).failed(gomysql.ErrInvalidConn) != gomysql.ErrInvalidConn {
		t.Fatal("a request that was sent must not be retried elsewhere")
	}
}

// TestQuietLoggerDropsOnlyOurDeadline: the line go-sql-driver logs for a read our cancellation
// ended (the socket's deadline in the past) is dropped; any other error line is kept.
func TestQuietLoggerDropsOnlyOurDeadline(t *testing.T) {
	c, _ := pair(t, false)
	if _, err := c.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Unix(1, 0))
	_, deadline := c.Read(make([]byte, 8))
	var got []string
	q := quietLogger{next: printFunc(func(v ...any) { got = append(got, fmt.Sprint(v...)) })}
	q.Print("packets.go:58 ", deadline)
	if len(got) != 0 {
		t.Fatalf("the deadline's line was logged: %q", got)
	}
	q.Print("packets.go:58 ", io.ErrUnexpectedEOF)
	q.Print("[warn] unexpected sequence nr")
	if len(got) != 2 || !strings.Contains(got[0], "unexpected EOF") {
		t.Fatalf("other lines: %q, want both kept", got)
	}
}

type printFunc func(v ...any)

func (f printFunc) Print(v ...any) { f(v...) }
