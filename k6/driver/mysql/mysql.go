// Package mysql is the k6/x/sql/driver/mysql module of tidb-bench-stack.
//
// Scripts import it exactly as they import grafana/xk6-sql-driver-mysql:
//
//	import sql from "k6/x/sql";
//	import driver from "k6/x/sql/driver/mysql";
//	const db = sql.open(driver, "user:pass@tcp(127.0.0.1:4000)/sbtest");
//
// Underneath is github.com/go-sql-driver/mysql. The one difference from the official
// module is how a statement with arguments reaches the server: the official driver
// prepares, executes and closes it on every call (three round trips), while this one
// prepares each distinct statement once per connection and re-executes it, as sysbench
// does with its server-side prepared statements. Statements without arguments (BEGIN,
// COMMIT, DDL) go as plain text queries. Two more calls of our own: `PrepareMarker + sql`
// prepares without executing (a step's connect phase, as sysbench's thread_init), and the
// DSN parameter tbs_ssl_ca=<PEM file> verifies the server's TLS certificate against that CA.
//
// Under every TCP connection is sock.go's socket: a statement's request is written by the read
// that waits for its reply, so a statement costs one write and one read system call, as
// sysbench's does, where Go's net.Conn adds a read that finds nothing and a wake of the
// runtime's monitor thread.
//
// One more guard: database/sql silently retries a statement on a new connection when the
// driver reports driver.ErrBadConn. Inside an explicit transaction (BEGIN sent as text) that
// would run the rest of a sysbench event in autocommit on another connection. This driver
// turns that case into MySQL error 2013 (lost connection), so the script sees it and restarts
// the event, as sysbench does.
package mysql

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/grafana/sobek"
	xsql "github.com/grafana/xk6-sql/sql"
	"go.k6.io/k6/js/modules"
)

// DriverName is the database/sql driver name this module registers.
const DriverName = "tbs-mysql"

// ImportPath is the JS import path, the same as the official driver module's.
const ImportPath = "k6/x/sql/driver/mysql"

// PrepareMarker: `db.exec(PrepareMarker + sql)` without arguments prepares sql on the
// connection (into its statement cache) without executing it, as sysbench prepares its
// statements when a thread starts. On the official driver the same call sends the text,
// whose `?` placeholders make it a syntax error: nothing is executed there either.
const PrepareMarker = "/*tbs:prepare*/ "

// maxCachedStmts bounds the prepared statements kept per connection (sysbench prepares
// fewer than 20 per connection; MySQL's max_prepared_stmt_count is server-wide).
const maxCachedStmts = 256

func init() {
	sql.Register(DriverName, &Driver{})
	modules.Register(ImportPath, &rootModule{id: xsql.RegisterDriver(DriverName)})
}

// rootModule exports the driver id symbol as the module's default export, as
// xk6-sql's RegisterModule does, but pointing at our database/sql driver.
type rootModule struct{ id *sobek.Symbol }

func (r *rootModule) NewModuleInstance(_ modules.VU) modules.Instance { return &instance{id: r.id} }

type instance struct{ id *sobek.Symbol }

func (i *instance) Exports() modules.Exports { return modules.Exports{Default: i.id} }

// Driver is a database/sql driver wrapping go-sql-driver/mysql.
type Driver struct{}

// Open implements driver.Driver.
func (d *Driver) Open(dsn string) (driver.Conn, error) {
	c, err := d.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

// OpenConnector implements driver.DriverContext.
func (d *Driver) OpenConnector(dsn string) (driver.Connector, error) {
	dsn, caFile := takeParam(dsn, "tbs_ssl_ca")
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if caFile != "" {
		// TLS verified against the given CA (the script's mysql_ssl=verify, mysql_ssl_ca)
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("mysql_ssl_ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("mysql_ssl_ca: no PEM certificate in %s", caFile)
		}
		host, _, _ := net.SplitHostPort(cfg.Addr)
		cfg.TLS = &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12}
	}
	// Our dialer hands the socket to the Conn being opened (see Conn.ExecContext).
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		var nd net.Dialer
		nc, err := nd.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetKeepAlive(true)
			// one system call fewer per statement (sock.go)
			if nc, err = newDeferredConn(tc); err != nil {
				_ = tc.Close()
				return nil, err
			}
		}
		if h, ok := ctx.Value(socketKey{}).(*net.Conn); ok {
			*h = nc
		}
		return nc, nil
	}
	if cfg.ReadTimeout == 0 && cfg.WriteTimeout == 0 {
		cfg.Logger = quietLogger{next: stderrLogger}
	}
	inner, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return &connector{inner: inner, drv: d}, nil
}

// stderrLogger is go-sql-driver's own default logger.
var stderrLogger gomysql.Logger = log.New(os.Stderr, "[mysql] ", log.Ldate|log.Ltime)

// quietLogger is go-sql-driver's logger without the lines our cancellation makes. To stop a
// statement when its context ends (k6 stops a VU, Ctrl-C) this driver puts the socket's
// deadline in the past (batch.go, ExecContext), where go-sql-driver's own watcher would have
// marked the connection canceled: go-sql-driver then logs the failed read, "i/o timeout", as a
// critical error, one line per connection of an interrupted run (72 lines at 200 threads),
// while the statement's caller gets the cancellation. Where the DSN sets no read or write
// timeout, that deadline is the only one a socket has, so a deadline error is ours and its line
// is dropped; every other line is kept.
type quietLogger struct{ next gomysql.Logger }

func (q quietLogger) Print(v ...any) {
	for _, x := range v {
		if err, ok := x.(error); ok && errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
	}
	q.next.Print(v...)
}

type socketKey struct{}

// takeParam removes the DSN parameter `name` (ours, unknown to go-sql-driver, which would
// send it to the server as a session variable) and returns its unescaped value.
func takeParam(dsn, name string) (string, string) {
	q := strings.IndexByte(dsn, '?')
	if q < 0 {
		return dsn, ""
	}
	var keep []string
	value := ""
	for _, kv := range strings.Split(dsn[q+1:], "&") {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			if u, err := url.QueryUnescape(v); err == nil {
				value = u
			}
			continue
		}
		keep = append(keep, kv)
	}
	if len(keep) == 0 {
		return dsn[:q], value
	}
	return dsn[:q+1] + strings.Join(keep, "&"), value
}

type connector struct {
	inner driver.Connector
	drv   *Driver
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	var sock net.Conn
	conn, err := c.inner.Connect(context.WithValue(ctx, socketKey{}, &sock))
	if err != nil {
		return nil, err
	}
	return &Conn{inner: conn, sock: sock, stmts: map[string]driver.Stmt{}}, nil
}

func (c *connector) Driver() driver.Driver { return c.drv }

// Conn is one server connection with its cache of prepared statements.
type Conn struct {
	inner driver.Conn
	sock  net.Conn // the socket under inner (nil when dialed by someone else)
	// canceled: a statement was interrupted by its context; the connection is unusable.
	canceled bool
	mu       sync.Mutex
	stmts    map[string]driver.Stmt
	order    []string
	inTx     bool // an explicit transaction was opened with a text BEGIN
	lost     bool // the connection failed inside a transaction: never reuse it
	// lastUse is when the last statement on this connection ended. database/sql resets a
	// connection each time it leaves the pool, and go-sql-driver's reset probes the socket
	// with a read() syscall to find stale idle connections; a VU's connection goes back to
	// the pool after every statement, so that probe would cost one syscall per query
	// (sysbench has none). It runs only when the connection sat idle for staleAfter.
	lastUse time.Time
	// a batch (batch.go): its context, whether that was canceled, and its watcher's stop
	batchCtx  context.Context
	fired     atomic.Bool
	stopWatch func() bool
}

// staleAfter: an idle connection older than this is probed before use.
const staleAfter = time.Second

// errLostInTx is what a connection failure inside a transaction becomes (CR_SERVER_LOST).
var errLostInTx = &gomysql.MySQLError{Number: 2013, SQLState: [5]byte{'H', 'Y', '0', '0', '0'},
	Message: "Lost connection to server during transaction (not retried on a new connection)"}

// failed is what a statement's error becomes: a lost connection (bad or invalid) inside a
// transaction turns into 2013 and the connection is never reused, so that database/sql does
// not retry the statement elsewhere and the script restarts the event (track and ExecBatch).
func (c *Conn) failed(err error) error {
	if errors.Is(err, gomysql.ErrInvalidConn) && c.nothingSent() {
		// the request never left (sock.go): what go-sql-driver says of a first write that
		// sent nothing, so that database/sql may retry it on a new connection
		err = driver.ErrBadConn
	}
	if c.inTx && (errors.Is(err, driver.ErrBadConn) || errors.Is(err, gomysql.ErrInvalidConn)) {
		c.inTx, c.lost = false, true
		return errLostInTx
	}
	return err
}

// nothingSent: the last request failed before any of it was written.
func (c *Conn) nothingSent() bool {
	d, ok := c.sock.(*deferredConn)
	return ok && d.nothingSent()
}

// track follows BEGIN / COMMIT / ROLLBACK sent as text, and turns a lost connection (bad or
// invalid connection) inside a transaction into 2013, so that database/sql does not retry
// the statement elsewhere and the script restarts the event.
func (c *Conn) track(query string, err error) error {
	c.lastUse = time.Now()
	if err != nil {
		return c.failed(err)
	}
	q := strings.TrimSpace(query)
	if len(q) > 17 {
		q = q[:17]
	}
	switch u := strings.ToUpper(q); {
	case strings.HasPrefix(u, "BEGIN"), strings.HasPrefix(u, "START TRANSACTION"):
		c.inTx = true
	case strings.HasPrefix(u, "COMMIT"), strings.HasPrefix(u, "ROLLBACK"):
		c.inTx = false
	}
	return nil
}

var (
	_ driver.Conn               = (*Conn)(nil)
	_ driver.QueryerContext     = (*Conn)(nil)
	_ driver.ExecerContext      = (*Conn)(nil)
	_ driver.ConnBeginTx        = (*Conn)(nil)
	_ driver.Pinger             = (*Conn)(nil)
	_ driver.SessionResetter    = (*Conn)(nil)
	_ driver.Validator          = (*Conn)(nil)
	_ driver.NamedValueChecker  = (*Conn)(nil)
	_ driver.ConnPrepareContext = (*Conn)(nil)
)

// stmt returns the cached prepared statement for query, preparing it on first use.
func (c *Conn) stmt(ctx context.Context, query string) (driver.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.stmts[query]; ok {
		return s, nil
	}
	s, err := c.inner.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s = withRows(s) // rows.go
	if len(c.order) >= maxCachedStmts {
		oldest := c.order[0]
		c.order = c.order[1:]
		_ = c.stmts[oldest].Close()
		delete(c.stmts, oldest)
	}
	c.stmts[query] = s
	c.order = append(c.order, query)
	return s, nil
}

// QueryContext implements driver.QueryerContext.
func (c *Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if c.lost {
		return nil, errLostInTx
	}
	if len(args) == 0 {
		rows, err := c.inner.(driver.QueryerContext).QueryContext(ctx, query, nil)
		return rows, c.track(query, err)
	}
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, c.track(query, err)
	}
	st, _ := rowsOf(s) // rows.go
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
	return rows, c.track(query, err)
}

// ExecContext implements driver.ExecerContext.
//
// go-sql-driver follows a statement's context with a watcher goroutine, woken twice per
// statement; at tens of thousands of statements per second those wake-ups cost more CPU
// than the statement's own work. Here the statement runs without a cancelable context and
// a cancel of ctx (k6 stopping the VU) interrupts it by putting the socket's deadline in the
// past: the statement fails, the connection is discarded and the error is ctx's.
func (c *Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if c.lost || c.canceled {
		return nil, errLostInTx
	}
	if len(args) == 0 && strings.HasPrefix(query, PrepareMarker) {
		// prepare only (sysbench's thread_init prepares its statements before the run)
		_, err := c.stmt(ctx, query[len(PrepareMarker):])
		c.lastUse = time.Now()
		return driver.RowsAffected(0), err
	}
	run := ctx
	var stop func() bool
	if c.sock != nil && ctx.Done() != nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sock := c.sock
		stop = context.AfterFunc(ctx, func() { _ = sock.SetDeadline(time.Unix(1, 0)) })
		run = context.Background()
	}
	res, err := c.exec(run, query, args)
	if stop != nil && !stop() {
		// ctx was canceled while the statement ran: whatever its outcome, the socket has
		// (or is about to have) a past deadline
		c.canceled = true
		return nil, ctx.Err()
	}
	return res, c.track(query, err)
}

func (c *Conn) exec(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if len(args) == 0 {
		return c.inner.(driver.ExecerContext).ExecContext(ctx, query, nil)
	}
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return execNamed(ctx, s, args) // rows.go
}

// PrepareContext implements driver.ConnPrepareContext (explicit prepares are not cached).
func (c *Conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.inner.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

// Prepare implements driver.Conn.
func (c *Conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// Begin implements driver.Conn.
func (c *Conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx implements driver.ConnBeginTx.
func (c *Conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.inner.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

// Close implements driver.Conn: it closes the cached statements, then the connection.
func (c *Conn) Close() error {
	c.mu.Lock()
	for _, s := range c.stmts {
		_ = s.Close()
	}
	c.stmts, c.order = nil, nil
	c.mu.Unlock()
	return c.inner.Close()
}

// Ping implements driver.Pinger.
func (c *Conn) Ping(ctx context.Context) error { return c.inner.(driver.Pinger).Ping(ctx) }

// ResetSession implements driver.SessionResetter.
// A stale idle connection found here inside a transaction is kept (not swapped for a new
// one by database/sql) and marked lost, so the next statement fails with 2013.
func (c *Conn) ResetSession(ctx context.Context) error {
	if c.lost || c.canceled {
		return driver.ErrBadConn
	}
	r, ok := c.inner.(driver.SessionResetter)
	if !ok {
		return nil
	}
	if time.Since(c.lastUse) < staleAfter {
		// busy connection: the cheap checks of go-sql-driver's reset, without the probe
		if v, ok := c.inner.(driver.Validator); ok && !v.IsValid() {
			return driver.ErrBadConn
		}
		return nil
	}
	err := r.ResetSession(ctx)
	if errors.Is(err, driver.ErrBadConn) && c.inTx {
		c.inTx, c.lost = false, true
		return nil
	}
	return err
}

// IsValid implements driver.Validator.
func (c *Conn) IsValid() bool {
	if c.lost || c.canceled {
		return false
	}
	if v, ok := c.inner.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// CheckNamedValue implements driver.NamedValueChecker.
func (c *Conn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.inner.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
