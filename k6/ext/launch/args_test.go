package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestARelativePasswordFileIsTheCallersPath(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseRunArgs([]string{"-e", "mysql_password_file=.stack/secrets/sbtest", "--env=mysql_host=h", "k6/oltp.js"})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(wd, ".stack/secrets/sbtest")
	if r.opts["mysql_password_file"] != want {
		t.Fatalf("mysql_password_file %q, want %q (k6 would open a relative path next to the script)", r.opts["mysql_password_file"], want)
	}
	if got := strings.Join(r.k6, " "); got != "-e mysql_password_file="+want+" --env=mysql_host=h k6/oltp.js" {
		t.Fatalf("k6 args %q", got)
	}
	r, err = parseRunArgs([]string{"-e", "mysql_password_file=/abs/file", "k6/oltp.js"})
	if err != nil || r.opts["mysql_password_file"] != "/abs/file" || strings.Join(r.k6, " ") != "-e mysql_password_file=/abs/file k6/oltp.js" {
		t.Fatalf("an absolute path changed: %v %v %q", err, r.opts, r.k6)
	}
}
