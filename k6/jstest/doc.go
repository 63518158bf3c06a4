// Package jstest runs the k6 JavaScript of tidb-bench-stack (k6/lib/*.js) in process, without
// k6's runner and without a database: its tests load the modules in a sobek runtime (ES modules
// resolved from k6/, k6's open() and __ENV), with our Go module k6/x/tbs and xk6-sql's k6/x/sql
// as they are built into bin/k6, k6's own k6, k6/execution and k6/metrics replaced by small
// recording stand-ins, and k6/x/sql/driver/mysql replaced by a database/sql driver that records
// every statement (harness_test.go). k6 keeps its module loader in internal packages, so the
// harness resolves modules itself, as k6 does for a script: relative specifiers from the
// importing file, "k6" and "k6/..." as Go modules.
//
// What the tests check (cd k6 && go test ./jstest):
//   - options_test.go: config.js's option parsing, from k6/contract.json: defaults, presets,
//     and for each bad value an error that names it and the valid values;
//   - steps_test.go: steps.js: thread steps as k6 scenarios and their windows;
//   - events_test.go + model_test.go: every workload k6/contract.json declares issues, for a
//     fixed seed, exactly the statements (texts and arguments, in order) of an independent Go
//     model of sysbench 1.0.20's Lua (oltp_common.lua's execute_* functions and the workloads'
//     own events), from the same random streams; the prepared statements are sysbench's
//     prepare_statements(); where sysbench's Lua is installed, each declared event is checked
//     against its event() function;
//   - errors_test.go: events.js's sysbench error handling (ignored errors, lost connections,
//     aborts that name the target and never the password);
//   - prepare_test.go: the CREATE TABLE and bulk INSERT of prepare.js against oltp_common.lua;
//   - summary_test.go: summary.js's per-step figures, printed lines and JSON file;
//   - recipe_test.go: docs/ARCHITECTURE.md's "Adding a workload", applied to a copy of
//     k6/contract.json, and no k6 script switching on a workload's name.
//
// No test here needs a server; all run under go test -short (scripts/test --fast).
package jstest
