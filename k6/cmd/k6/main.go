// Command k6 is tidb-bench-stack's k6: stock go.k6.io/k6 plus the xk6-sql extension, our
// MySQL driver module (JS import path k6/x/sql/driver/mysql), our module k6/x/tbs and the
// launcher core, the subcommand `k6 x tbs` (k6/ext/launch).
package main

import (
	k6cmd "go.k6.io/k6/cmd"

	_ "github.com/grafana/xk6-sql"       // k6/x/sql
	_ "tidb-bench-stack/k6/driver/mysql" // k6/x/sql/driver/mysql
	_ "tidb-bench-stack/k6/ext/launch"   // k6 x tbs (the launcher core)
	_ "tidb-bench-stack/k6/ext/tbs"      // k6/x/tbs
)

func main() {
	k6cmd.Execute()
}
