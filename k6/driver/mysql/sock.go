package mysql

// sock.go: the connection's socket, with one system call fewer per statement.
//
// A statement is a request and its reply. Through a plain *net.TCPConn Go makes four calls for
// it: write(2) the request; read(2), which finds nothing yet (EAGAIN) because the server has
// not answered; a park until the scheduler's epoll_wait says the socket is readable; read(2)
// again. sysbench's thread writes and then blocks in one read. The read that finds nothing
// cannot simply be left out: Go clears the socket's "readable" mark at the start of every read
// (so that an old mark does not make it wait for nothing), and a reply that arrived between the
// write and that start would leave no mark behind: the read would wait forever.
//
// So the request is not written in Write. It waits in a buffer, and the next Read writes it
// from inside the socket's RawConn.Read callback: after Go has cleared the mark, before it
// waits. A reply arriving at any time after the write sets the mark, the wait returns, and the
// callback's second call reads it. Per statement: write, park, read.
//
// What stays as it was:
//   - the bytes and their order (a COM_STMT_CLOSE, which has no reply, goes with the next
//     request; Close sends what is pending before it closes: COM_QUIT);
//   - large writes (more than deferMax pending) and a write that would block go through
//     net.TCPConn's Write as before;
//   - deadlines (a canceled statement's deadline in the past ends the wait, with the error
//     net.TCPConn's Read gives);
//   - a request that could not be written at all: it is reported as database/sql's
//     driver.ErrBadConn, as go-sql-driver reports a first write that sent nothing, so that
//     database/sql retries the statement on a new connection (Conn.failed, nothingSent);
//   - go-sql-driver's stale-connection probe (SyscallConn) and TLS, which sits above this.

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// deferMax: a request longer than this is written at once (a bulk insert), as before.
const deferMax = 16 << 10

// deferredConn is a TCP socket whose writes are sent by the next read. go-sql-driver writes
// and reads on one goroutine; only Close may come from another (its cancel watcher), so the
// mutex guards the pending bytes, never a wait.
type deferredConn struct {
	*net.TCPConn
	raw     syscall.RawConn
	mu      sync.Mutex
	pending []byte // written by Write, not yet sent
	spare   []byte // the buffer a Read sends from, kept for the next requests
	// unsent: the last request failed before any of it was written: the server cannot have
	// seen it (Conn.failed turns the read's error into driver.ErrBadConn, retried elsewhere)
	unsent atomic.Bool
	full   int // requests that found the send buffer full (tests: the path is reached)
	// op: the state of the Read in progress, which its RawConn.Read callback fills. It lives
	// here, and the callback (onReady) is made once per connection, because a closure made in
	// Read escapes to the heap through RawConn's interface: five allocations per statement.
	op      readOp
	onReady func(fd uintptr) bool
}

// readOp is one Read's request, destination and outcome.
type readOp struct {
	req, b     []byte
	n, sent    int
	werr, rerr error
	blocked    bool // the socket's send buffer is full: net.TCPConn's Write waits for room
}

func newDeferredConn(tc *net.TCPConn) (net.Conn, error) {
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	// the two buffers grow to the largest request sent (a point select's is 26 bytes):
	// no fixed size per connection, which 1,500 threads would pay 1,500 times
	d := &deferredConn{TCPConn: tc, raw: raw}
	d.onReady = d.ready
	return d, nil
}

// Write keeps b for the next Read; a large request is written at once, after what is pending.
func (d *deferredConn) Write(b []byte) (int, error) {
	d.mu.Lock()
	if len(d.pending)+len(b) <= deferMax {
		d.pending = append(d.pending, b...)
		d.mu.Unlock()
		return len(b), nil
	}
	req := d.take()
	d.mu.Unlock()
	if len(req) > 0 {
		n, err := d.TCPConn.Write(req)
		d.give(req)
		if err != nil {
			d.unsent.Store(n == 0)
			return 0, err
		}
	}
	return d.TCPConn.Write(b)
}

// take returns the pending bytes and starts an empty buffer for the next ones (mu held).
func (d *deferredConn) take() []byte {
	req := d.pending
	d.pending = d.spare[:0]
	d.spare = nil
	return req
}

// give keeps req's buffer for reuse.
func (d *deferredConn) give(req []byte) {
	d.mu.Lock()
	if d.spare == nil && cap(req) <= deferMax {
		d.spare = req[:0]
	}
	d.mu.Unlock()
}

// Read sends what is pending, then waits for the reply without first reading an empty socket.
func (d *deferredConn) Read(b []byte) (int, error) {
	d.mu.Lock()
	if len(d.pending) == 0 {
		d.mu.Unlock()
		return d.TCPConn.Read(b)
	}
	req := d.take()
	d.mu.Unlock()
	defer d.give(req)
	d.op = readOp{req: req, b: b}
	err := d.raw.Read(d.onReady)
	op := d.op
	d.op = readOp{} // keeps no reference to the caller's buffer
	switch {
	case op.werr != nil:
		d.unsent.Store(op.sent == 0)
		return 0, d.opError("write", op.werr)
	case err != nil: // a deadline (a canceled statement) or a closed socket
		d.unsent.Store(op.sent == 0)
		return 0, d.opError("read", err)
	case op.blocked:
		d.full++
		_, err := d.TCPConn.Write(req[op.sent:])
		if err != nil {
			d.unsent.Store(op.sent == 0)
			return 0, err
		}
		return d.TCPConn.Read(b)
	case op.rerr == io.EOF:
		return 0, io.EOF
	case op.rerr != nil:
		return 0, d.opError("read", op.rerr)
	}
	d.unsent.Store(false)
	return op.n, nil
}

// ready is the RawConn.Read callback of Read: it sends d.op.req, then (on its next call, once
// the socket is readable) reads the reply into d.op.b. It returns false to wait.
func (d *deferredConn) ready(fd uintptr) bool {
	op := &d.op
	if op.sent < len(op.req) {
		return d.send(fd, op)
	}
	for {
		r, e := rawIO(syscall.SYS_READ, fd, op.b)
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN: // woken for nothing: wait again
			return false
		case e != 0:
			op.rerr = e
		case r == 0 && len(op.b) > 0:
			op.rerr = io.EOF
		default:
			op.n = r
		}
		return true
	}
}

// send writes op.req[op.sent:] in the RawConn.Read callback: false (wait for the reply) once
// all of it is out, true when the socket's buffer is full (op.blocked) or the write failed
// (op.werr).
func (d *deferredConn) send(fd uintptr, op *readOp) bool {
	for op.sent < len(op.req) {
		w, e := rawIO(syscall.SYS_WRITE, fd, op.req[op.sent:])
		if w > 0 {
			op.sent += w
		}
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			op.blocked = true
			return true
		case e != 0:
			op.werr = e
			return true
		}
	}
	// the request is out; the reply cannot be here yet: wait for it without reading (Go
	// cleared the socket's readable mark before this callback, so the reply's mark stays)
	return false
}

func (d *deferredConn) opError(op string, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		return err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: d.LocalAddr(), Addr: d.RemoteAddr(), Err: err}
}

// Close sends what is pending (go-sql-driver's COM_QUIT), never waiting, and closes the socket.
func (d *deferredConn) Close() error {
	d.mu.Lock()
	req := d.pending
	d.pending = nil
	d.mu.Unlock()
	if len(req) > 0 {
		_ = d.raw.Write(func(fd uintptr) bool {
			_, _ = syscall.Write(int(fd), req) // best effort
			return true
		})
	}
	return d.TCPConn.Close()
}

// nothingSent reports whether the last request failed before any of it was written.
func (d *deferredConn) nothingSent() bool { return d.unsent.Load() }

// rawIO is read(2) or write(2) on the non-blocking socket, without telling the scheduler
// (syscall.RawSyscall): the call never blocks, and a system call the scheduler is told of wakes
// its monitor thread (sysmon) whenever the process was idle, a thread switch per statement on
// a client that waits for its server.
func rawIO(trap, fd uintptr, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	n, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}
