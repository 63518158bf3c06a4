package jstest

// sysbench.js's prepare statements (prepare.js sends them) against oltp_common.lua's
// create_table(): the CREATE TABLE text, and the rows of its bulk INSERT (ids 1..table_size
// unless auto_inc, k from the default distribution over 1..table_size, c and pad from their
// templates). The values are drawn k, c, pad per row, where sysbench draws c, pad, k: the
// same distributions; a seeded run repeats our own stream, not sysbench's generator's.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// createTable is oltp_common.lua's CREATE TABLE for the mysql driver.
func createTable(t int, secondary, autoInc bool, engine, extra string) string {
	idIndex, idDef := "PRIMARY KEY", "INTEGER NOT NULL"
	if secondary {
		idIndex = "KEY xid"
	}
	if autoInc {
		idDef = "INTEGER NOT NULL AUTO_INCREMENT"
	}
	return fmt.Sprintf("CREATE TABLE sbtest%d(\n  id %s,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n"+
		"  pad CHAR(60) DEFAULT '' NOT NULL,\n  %s (id)\n) %s %s", t, idDef, idIndex, "/*! ENGINE = "+engine+" */", extra)
}

func TestPrepareStatementsAreSysbenchs(t *testing.T) {
	h := New(t, "")
	h.Files["jstest_prepare.js"] = `
import { parseOptions } from './lib/config.js';
import { makeRand } from './lib/rand.js';
import { createTableSql, insertRowsSql } from './lib/sysbench.js';
export function create(env, t) { return createTableSql(parseOptions(env), t); }
export function rows(env, t, first, last) { const o = parseOptions(env); return insertRowsSql(o, makeRand(o, 9), t, first, last); }
`
	ns := h.Import("jstest_prepare.js")
	for _, c := range []struct {
		env               map[string]string
		secondary, autoIn bool
		engine, extra     string
	}{
		{map[string]string{}, false, true, "innodb", ""},
		{map[string]string{"secondary": "on", "auto_inc": "off", "mysql_storage_engine": "myrocks", "create_table_options": "COMMENT 'x'"},
			true, false, "myrocks", "COMMENT 'x'"},
	} {
		for _, tn := range []int{1, 12} {
			got := h.MustCall(ns, "create", c.env, tn).String()
			if want := createTable(tn, c.secondary, c.autoIn, c.engine, c.extra); got != want {
				t.Errorf("%v table %d:\n%s\nwant (oltp_common.lua):\n%s", c.env, tn, got, want)
			}
		}
	}
	digits := func(n int) string { return strings.Repeat("[0-9]", n) }
	cRe := strings.TrimSuffix(strings.Repeat(digits(11)+"-", 10), "-")
	padRe := strings.TrimSuffix(strings.Repeat(digits(11)+"-", 5), "-")
	for _, autoInc := range []bool{false, true} {
		env := map[string]string{"table_size": "500", "rand_type": "uniform", "auto_inc": strconv.FormatBool(autoInc)}
		got := h.MustCall(ns, "rows", env, 3, 101, 140).String()
		head, row := "INSERT INTO sbtest3(id, k, c, pad) VALUES", `\((\d+), (\d+), '`+cRe+`', '`+padRe+`'\)`
		if autoInc {
			head, row = "INSERT INTO sbtest3(k, c, pad) VALUES", `\(()(\d+), '`+cRe+`', '`+padRe+`'\)`
		}
		if !strings.HasPrefix(got, head) {
			t.Fatalf("auto_inc=%v: %.80s..., want %s", autoInc, got, head)
		}
		re := regexp.MustCompile(`^` + row + `(?:,|$)`)
		rest := got[len(head):]
		id := 101
		ks := map[string]bool{}
		for rest != "" {
			m := re.FindStringSubmatch(rest)
			if m == nil {
				t.Fatalf("auto_inc=%v: row %d is not sysbench's: %.200s", autoInc, id-100, rest)
			}
			if !autoInc && m[1] != strconv.Itoa(id) {
				t.Errorf("row id %s, want %d", m[1], id)
			}
			if k, _ := strconv.Atoi(m[2]); k < 1 || k > 500 {
				t.Errorf("k = %d, outside 1..table_size", k)
			}
			ks[m[2]] = true
			rest = rest[len(m[0]):]
			id++
		}
		if id != 141 || len(ks) < 10 {
			t.Errorf("auto_inc=%v: %d rows with %d distinct k, want 40 rows of random k", autoInc, id-101, len(ks))
		}
	}
}

// The rows of prepare's INSERT are built in Go in one call (rand.rows): the same text, and the
// same draws in the same order, as building them one by one in JavaScript from the Rand's
// def() and string() (the code rand.rows replaced), for every rand_type, with and without ids.
func TestPrepareRowsInGoAreTheRowsOfJavaScript(t *testing.T) {
	h := New(t, "")
	h.Files["jstest_rows.js"] = `
import { parseOptions } from './lib/config.js';
import { makeRand } from './lib/rand.js';
import { insertRowsSql, C_TEMPLATE, PAD_TEMPLATE } from './lib/sysbench.js';
export function native(env, first, last) { const o = parseOptions(env); return insertRowsSql(o, makeRand(o, 7), 2, first, last); }
export function byRow(env, first, last) {
  const o = parseOptions(env);
  const rand = makeRand(o, 7);
  const rows = [];
  for (let i = first; i <= last; i++) {
    const k = rand.def(1, o.table_size);
    const c = rand.string(C_TEMPLATE);
    const pad = rand.string(PAD_TEMPLATE);
    rows.push(o.auto_inc ? '(' + k + ", '" + c + "', '" + pad + "')" : '(' + i + ', ' + k + ", '" + c + "', '" + pad + "')");
  }
  return 'INSERT INTO sbtest2' + (o.auto_inc ? '(k, c, pad)' : '(id, k, c, pad)') + ' VALUES' + rows.join(',');
}
`
	ns := h.Import("jstest_rows.js")
	for _, rt := range []string{"uniform", "gaussian", "special", "pareto", "zipfian"} {
		for _, autoInc := range []string{"off", "on"} {
			env := map[string]string{"table_size": "100000", "rand_type": rt, "rand_seed": "12345", "auto_inc": autoInc}
			got := h.MustCall(ns, "native", env, 99990, 100123).String()
			want := h.MustCall(ns, "byRow", env, 99990, 100123).String()
			if got != want {
				i := 0
				for i < len(got) && i < len(want) && got[i] == want[i] {
					i++
				}
				t.Errorf("rand_type=%s auto_inc=%s: rows differ at byte %d: %.60q, one by one %.60q", rt, autoInc, i,
					got[i:], want[min(i, len(want)):])
			}
			if n := strings.Count(got, "'), ("); n != 0 {
				t.Errorf("rand_type=%s: separator: %d rows joined by ', ' (want ',')", rt, n)
			}
			if rows := strings.Count(got, "')"); rows != 134 {
				t.Errorf("rand_type=%s auto_inc=%s: %d rows, want 134", rt, autoInc, rows)
			}
		}
	}
}
