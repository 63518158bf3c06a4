package mysql

// These tests talk to the local stack's real servers (scripts/stack up --target both):
// TiDB on 127.0.0.1:4000 and MariaDB on 127.0.0.1:3306, user sbtest with the password in
// .stack/secrets/sbtest. TBS_TIDB_ADDR, TBS_MARIADB_ADDR and TBS_SBTEST_PASSWORD override.
// Under `go test -short` (scripts/test --fast: no server) the tests that need them skip.

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

//go:embed testdata/smoke.js
var smokeJS string

var repoRoot = filepath.Join("..", "..", "..")

type target struct{ name, addr string }

func targets() []target {
	t := []target{{"tidb", "127.0.0.1:4000"}, {"mariadb", "127.0.0.1:3306"}}
	if v := os.Getenv("TBS_TIDB_ADDR"); v != "" {
		t[0].addr = v
	}
	if v := os.Getenv("TBS_MARIADB_ADDR"); v != "" {
		t[1].addr = v
	}
	return t
}

// needsServers skips a test under -short: the fast tier runs with no server (CONTRIBUTING.md).
func needsServers(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the local stack's TiDB and MariaDB (scripts/test runs it; -short is the fast tier)")
	}
}

func password(t *testing.T) string {
	needsServers(t)
	if v := os.Getenv("TBS_SBTEST_PASSWORD"); v != "" {
		return v
	}
	state := os.Getenv("TBS_STATE")
	if state == "" {
		state = filepath.Join(repoRoot, ".stack")
	}
	b, err := os.ReadFile(filepath.Join(state, "secrets", "sbtest"))
	if err != nil {
		t.Fatalf("no sbtest password (start the local stack: scripts/stack up --target both): %v", err)
	}
	return strings.TrimSpace(string(b))
}

func dsn(t *testing.T, addr string) string {
	return fmt.Sprintf("sbtest:%s@tcp(%s)/sbtest?timeout=5s", password(t), addr)
}

func open(t *testing.T, driverName, addr string) *sql.DB {
	db, err := sql.Open(driverName, dsn(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		t.Fatalf("%s not reachable at %s (scripts/stack up --target both): %v", driverName, addr, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestScriptThroughK6 runs the embedded JS through the built bin/k6 against each target.
func TestScriptThroughK6(t *testing.T) {
	needsServers(t)
	k6 := os.Getenv("K6_BIN")
	if k6 == "" {
		k6 = filepath.Join(repoRoot, "bin", "k6")
	}
	if _, err := os.Stat(k6); err != nil {
		t.Fatalf("built k6 missing at %s (scripts/build k6): %v", k6, err)
	}
	script := filepath.Join(t.TempDir(), "smoke.js")
	if err := os.WriteFile(script, []byte(smokeJS), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets() {
		t.Run(tg.name, func(t *testing.T) {
			cmd := exec.Command(k6, "run", "--quiet", "--summary-mode=disabled", "--no-usage-report", script)
			cmd.Env = append(os.Environ(), "DSN="+dsn(t, tg.addr), "K6_OUT=")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("k6 failed against %s: %v\n%s", tg.name, err, out)
			}
			if !strings.Contains(string(out), "driver-smoke: ok") {
				t.Fatalf("script did not finish against %s:\n%s", tg.name, out)
			}
		})
	}
}

func sessionStatus(t *testing.T, db *sql.DB, name string) int {
	var k string
	var v int
	if err := db.QueryRow("SHOW SESSION STATUS LIKE '"+name+"'").Scan(&k, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPreparesOncePerConnection: a statement with arguments is prepared once per connection
// and re-executed (sysbench's way), where go-sql-driver alone prepares it on every call.
func TestPreparesOncePerConnection(t *testing.T) {
	needsServers(t)
	addr := targets()[1].addr // MariaDB counts prepares per session (Com_stmt_prepare)
	for _, c := range []struct {
		driver string
		want   func(n int) bool
		desc   string
	}{
		{DriverName, func(n int) bool { return n == 1 }, "exactly 1"},
		{"mysql", func(n int) bool { return n >= 100 }, "at least 100"},
	} {
		db := open(t, c.driver, addr)
		before := sessionStatus(t, db, "Com_stmt_prepare")
		for i := 0; i < 100; i++ {
			var v int
			if err := db.QueryRow("SELECT ? + 1", i).Scan(&v); err != nil || v != i+1 {
				t.Fatalf("%s: SELECT ? + 1 with %d: %v, %d", c.driver, i, err, v)
			}
		}
		if n := sessionStatus(t, db, "Com_stmt_prepare") - before; !c.want(n) {
			t.Errorf("%s: %d prepares for 100 executions, want %s", c.driver, n, c.desc)
		}
	}
}

// cutProxy forwards TCP connections to addr; cut() drops them all, as a network failure would
// (a KILL would do too on MariaDB, but this TiDB build can panic when a connection holding
// uncommitted writes is killed).
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, addr string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.cut() })
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestLostConnectionInsideTransaction: when the connection drops between two statements of
// an explicit transaction, the next statement must fail with 2013 rather than run in
// autocommit on a new connection (which plain database/sql + go-sql-driver does).
func TestLostConnectionInsideTransaction(t *testing.T) {
	needsServers(t)
	for _, tg := range targets() {
		t.Run(tg.name, func(t *testing.T) {
			admin := open(t, "mysql", tg.addr)
			must := func(_ sql.Result, err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(admin.Exec("DROP TABLE IF EXISTS driver_lost"))
			must(admin.Exec("CREATE TABLE driver_lost (id INT PRIMARY KEY)"))
			defer admin.Exec("DROP TABLE IF EXISTS driver_lost")

			run := func(driverName string, id int) error {
				proxy := newCutProxy(t, tg.addr)
				db := open(t, driverName, proxy.addr())
				must(db.Exec("BEGIN"))
				must(db.Exec("INSERT INTO driver_lost (id) VALUES (?)", id))
				var connID int64
				if err := db.QueryRow("SELECT CONNECTION_ID()").Scan(&connID); err != nil {
					t.Fatal(err)
				}
				proxy.cut()
				waitGone(t, admin, connID)
				_, err := db.Exec("INSERT INTO driver_lost (id) VALUES (?)", id+1)
				return err
			}

			err := run(DriverName, 10)
			var me *gomysql.MySQLError
			if !errors.As(err, &me) || me.Number != 2013 {
				t.Fatalf("our driver: want error 2013 after the connection was killed, got %v", err)
			}
			if n := count(t, admin, 10); n != 0 {
				t.Fatalf("our driver: %d rows of the killed transaction are in the table, want 0", n)
			}

			// The reason for the guard: the stock stack retries silently in autocommit.
			if err := run("mysql", 20); err == nil {
				if n := count(t, admin, 20); n != 1 {
					t.Fatalf("plain driver: expected the silent autocommit retry to leave 1 row, found %d", n)
				}
			} else {
				t.Logf("plain driver returned %v this time (no silent retry)", err)
			}
		})
	}
}

func count(t *testing.T, db *sql.DB, from int) int {
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM driver_lost WHERE id >= ? AND id < ?", from, from+10).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func waitGone(t *testing.T, admin *sql.DB, id int64) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := admin.QueryRow("SELECT COUNT(*) FROM information_schema.processlist WHERE id = ?", id).Scan(&n); err == nil && n == 0 {
			time.Sleep(50 * time.Millisecond) // let the FIN reach the client socket
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("connection %d did not end within 10s", id)
}

// TestCancelInterruptsStatement: statements run without go-sql-driver's per-statement
// watcher goroutine, so a cancel of the context (k6 stopping a VU) must still interrupt a
// running statement at once, fail it with the context's error, and leave the pool a good
// connection for the next statement.
func TestCancelInterruptsStatement(t *testing.T) {
	needsServers(t)
	for _, tg := range targets() {
		t.Run(tg.name, func(t *testing.T) {
			db := open(t, DriverName, tg.addr)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			start := time.Now()
			_, err := db.ExecContext(ctx, "SELECT SLEEP(?)", 5)
			took := time.Since(start)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("want context.Canceled from the interrupted SELECT SLEEP(5), got %v", err)
			}
			if took > 2*time.Second {
				t.Fatalf("the cancel took %v to interrupt SELECT SLEEP(5)", took)
			}
			var v int
			if err := db.QueryRow("SELECT ? + 1", 41).Scan(&v); err != nil || v != 42 {
				t.Fatalf("next statement after the cancel: %v, %d", err, v)
			}
			// a context canceled before the call fails it without touching the server
			if _, err := db.ExecContext(ctx, "SELECT ?", 1); !errors.Is(err, context.Canceled) {
				t.Fatalf("want context.Canceled for an already canceled context, got %v", err)
			}
		})
	}
}

// TestNoLivenessProbePerStatement: a busy connection is not probed with a read() before
// every statement (go-sql-driver's check for stale idle connections), but an idle one is:
// a connection whose server side went away while idle is replaced without an error.
func TestNoLivenessProbePerStatement(t *testing.T) {
	needsServers(t)
	tg := targets()[1]
	proxy := newCutProxy(t, tg.addr)
	db := open(t, DriverName, proxy.addr())
	for i := 0; i < 3; i++ {
		if _, err := db.Exec("SELECT ?", i); err != nil {
			t.Fatal(err)
		}
	}
	proxy.cut()
	time.Sleep(staleAfter + 100*time.Millisecond) // idle long enough to be probed
	if _, err := db.Exec("SELECT ?", 1); err != nil {
		t.Fatalf("an idle connection that died should be replaced silently, got %v", err)
	}
	// busy: cut it right after a statement; the next one finds out by failing (as sysbench
	// would), not by a probe
	proxy.cut()
	time.Sleep(50 * time.Millisecond)
	_, err := db.Exec("SELECT ?", 2)
	if err == nil {
		t.Fatal("a statement on a connection cut right after its last use should fail (no probe), got no error")
	}
	if _, err := db.Exec("SELECT ?", 3); err != nil {
		t.Fatalf("the statement after the failure should run on a new connection, got %v", err)
	}
}

// TestPrepareMarkerPreparesWithoutExecuting: PrepareMarker + an UPDATE prepares it on the
// connection (one Com_stmt_prepare) and runs nothing; the same statement then executes from
// the cache without another prepare.
func TestPrepareMarkerPreparesWithoutExecuting(t *testing.T) {
	needsServers(t)
	db := open(t, DriverName, targets()[1].addr)
	if _, err := db.Exec("CREATE TEMPORARY TABLE tbs_marker (id INT PRIMARY KEY, k INT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO tbs_marker VALUES (1, 10)"); err != nil {
		t.Fatal(err)
	}
	const upd = "UPDATE tbs_marker SET k=k+1 WHERE id=?"
	before := sessionStatus(t, db, "Com_stmt_prepare")
	res, err := db.Exec(PrepareMarker + upd)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 0 {
		t.Fatalf("prepare-only call affected %d rows", n)
	}
	var k int
	if err := db.QueryRow("SELECT k FROM tbs_marker WHERE id=1").Scan(&k); err != nil || k != 10 {
		t.Fatalf("k = %d (err %v): the prepare-only call executed the UPDATE", k, err)
	}
	if got := sessionStatus(t, db, "Com_stmt_prepare") - before; got != 1 {
		t.Fatalf("%d prepares for the marker, want 1", got)
	}
	if _, err := db.Exec(upd, 1); err != nil {
		t.Fatal(err)
	}
	if got := sessionStatus(t, db, "Com_stmt_prepare") - before; got != 1 {
		t.Fatalf("executing after the marker prepared again (%d prepares)", got)
	}
	if err := db.QueryRow("SELECT k FROM tbs_marker WHERE id=1").Scan(&k); err != nil || k != 11 {
		t.Fatalf("k = %d after one UPDATE (err %v)", k, err)
	}
}

func TestTakeParam(t *testing.T) {
	cases := []struct{ in, out, val string }{
		{"u:p@tcp(h:1)/db?timeout=5s&tbs_ssl_ca=%2Ftmp%2Fca.pem&tls=x", "u:p@tcp(h:1)/db?timeout=5s&tls=x", "/tmp/ca.pem"},
		{"u:p@tcp(h:1)/db?tbs_ssl_ca=a", "u:p@tcp(h:1)/db", "a"},
		{"u:p@tcp(h:1)/db?timeout=5s", "u:p@tcp(h:1)/db?timeout=5s", ""},
		{"u:p@tcp(h:1)/db", "u:p@tcp(h:1)/db", ""},
	}
	for _, c := range cases {
		out, val := takeParam(c.in, "tbs_ssl_ca")
		if out != c.out || val != c.val {
			t.Errorf("takeParam(%q) = %q, %q; want %q, %q", c.in, out, val, c.out, c.val)
		}
	}
}
