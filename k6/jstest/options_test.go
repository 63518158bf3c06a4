package jstest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grafana/sobek"
)

// contractOf reads k6/contract.json from a k6/ folder (the options, the workloads).
type contractDoc struct {
	Workloads map[string]workloadDecl `json:"workloads"`
	Options   map[string]struct {
		Type    string   `json:"type"`
		Default any      `json:"default"`
		Valid   []string `json:"valid"`
	} `json:"options"`
	Presets map[string]map[string]string `json:"presets"`
}

type workloadDecl struct {
	Event       []string       `json:"event"`
	Trx         bool           `json:"trx"`
	Counts      map[string]int `json:"counts"`
	SingleTable bool           `json:"single_table"`
	TablesAfter *string        `json:"tables_after"`
}

// workloadNames: the declared workloads in the contract's order.
func workloadNames(t testing.TB, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	var names []string
	// walk the top-level object to the "workloads" key, then read its keys in order
	tok := func() json.Token {
		x, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	tok() // {
	for dec.More() {
		k := tok().(string)
		if k != "workloads" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
			continue
		}
		tok() // {
		for dec.More() {
			names = append(names, tok().(string))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
		return names
	}
	t.Fatal("k6/contract.json has no workloads")
	return nil
}

func readContract(t testing.TB, h *H) (contractDoc, []string) {
	t.Helper()
	s, err := h.read(filepath.Join(h.Dir, "contract.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c contractDoc
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		t.Fatal(err)
	}
	return c, workloadNames(t, []byte(s))
}

// parse runs config.js's parseOptions on env; the error is what it threw.
func parse(t *testing.T, h *H, env map[string]string) (map[string]any, error) {
	t.Helper()
	cfg := h.Import("lib/config.js")
	v, err := h.Call(cfg, "parseOptions", env)
	if err != nil {
		return nil, err
	}
	return v.Export().(map[string]any), nil
}

func TestDefaultsAreTheContracts(t *testing.T) {
	h := New(t, "")
	c, _ := readContract(t, h)
	o, err := parse(t, h, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	for name, spec := range c.Options {
		want, _ := json.Marshal(spec.Default)
		got, _ := json.Marshal(o[name])
		if string(want) != string(got) {
			t.Errorf("option %s: default %s, the contract says %s", name, got, want)
		}
	}
	if len(o) != len(c.Options)+1 { // + help
		t.Errorf("parseOptions gave %d names, the contract has %d options", len(o), len(c.Options))
	}
}

func TestBadValuesNameTheValueAndTheValidOnes(t *testing.T) {
	h := New(t, "")
	c, workloads := readContract(t, h)
	cases := []struct {
		env  map[string]string
		want []string // each must appear in the message
	}{
		{map[string]string{"workload": "oltp_nope"}, append([]string{"workload=oltp_nope"}, workloads...)},
		{map[string]string{"threads": "0"}, []string{"threads=0", ">= 1"}},
		{map[string]string{"threads": "8,16,8"}, []string{"threads=8,16,8", "once"}},
		{map[string]string{"threads": "8,x"}, []string{"threads=8,x", "comma-separated"}},
		{map[string]string{"tables": "-1"}, []string{"tables=-1", ">= 1"}},
		{map[string]string{"table_size": "1e3"}, []string{"table_size=1e3", ">= 0"}},
		{map[string]string{"time": ""}, []string{"time=(empty)"}},
		{map[string]string{"percentile": "101"}, []string{"percentile=101", "0 to 100"}},
		{map[string]string{"rand_spec_res": "100"}, []string{"rand_spec_res=100", "0 to 99"}},
		{map[string]string{"rand_pareto_h": "1"}, []string{"rand_pareto_h=1", "between 0 and 1"}},
		{map[string]string{"rand_type": "normal"}, []string{"rand_type=normal", "uniform", "gaussian", "special", "pareto", "zipfian"}},
		{map[string]string{"skip_trx": "maybe"}, []string{"skip_trx=maybe", "on/off"}},
		{map[string]string{"mysql_port": "70000"}, []string{"mysql_port=70000", "1 to 65535"}},
		{map[string]string{"mysql_ignore_errors": "1062,x"}, []string{"mysql_ignore_errors=1062,x", "all"}},
		{map[string]string{"connect_time": "soon"}, []string{"connect_time=soon", "auto"}},
		{map[string]string{"testid": "-bad"}, []string{"testid=-bad", "letters, digits"}},
		{map[string]string{"prepare_mode": "server", "rand_seed": "7"}, []string{"prepare_mode=server", "rand_seed", "prepare_mode=client"}},
		{map[string]string{"mysql_ssl_ca": "/ca.pem"}, []string{"mysql_ssl=off", "mysql_ssl=verify"}},
		{map[string]string{"tabels": "2"}, []string{"unknown option 'tabels'", "did you mean 'tables'"}},
		{map[string]string{"tidb_status_addr": "http://u:pw@h:10080"}, []string{"tidb_status_addr=(a value with user@, not shown)", "host:port"}},
		{map[string]string{"tidb_status_addr": "127.0.0.1"}, []string{"tidb_status_addr=127.0.0.1", "host:port"}},
		{map[string]string{"tikv_status_addr": "tikv:20180,http://u:pw@tikv2:20180"}, []string{"tikv_status_addr=(a value with user@, not shown)", "comma list"}},
		{map[string]string{"tikv_status_addr": "tikv:20180,,tikv2:20180"}, []string{"tikv_status_addr=tikv:20180,,tikv2:20180", "host:port"}},
		{map[string]string{"pd_addr": "pd"}, []string{"pd_addr=pd", "host:port, or a comma list"}},
	}
	// every option with valid values: a bad one lists them all
	for name, spec := range c.Options {
		if len(spec.Valid) > 0 {
			cases = append(cases, struct {
				env  map[string]string
				want []string
			}{map[string]string{name: "bogus-value"}, append([]string{name + "=bogus-value"}, nonEmpty(spec.Valid)...)})
		}
	}
	for _, tc := range cases {
		_, err := parse(t, h, tc.env)
		if err == nil {
			t.Errorf("%v: accepted", tc.env)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "OptionError") && !strings.Contains(msg, "invalid option") && !strings.Contains(msg, "unknown option") {
			t.Errorf("%v: not an option error: %s", tc.env, msg)
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%v: the error does not name %q: %s", tc.env, w, msg)
			}
		}
		if strings.Contains(msg, "pw@") {
			t.Errorf("%v: the error repeats a password: %s", tc.env, msg)
		}
	}
}

func nonEmpty(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

func TestGoodValuesAndPresets(t *testing.T) {
	h := New(t, "")
	c, workloads := readContract(t, h)
	for _, w := range workloads {
		o, err := parse(t, h, map[string]string{"workload": " " + w + " "})
		if err != nil || o["workload"] != w {
			t.Errorf("workload=%s: %v %v", w, o["workload"], err)
		}
	}
	o, err := parse(t, h, map[string]string{"threads": "150, 300,600", "skip_trx": "ON", "mysql_ignore_errors": "all",
		"connect_time": "0", "rand_pareto_h": "0.5"})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal([]any{o["threads"], o["skip_trx"], o["mysql_ignore_errors"], o["connect_time"], o["rand_pareto_h"]})
	if string(j) != `[[150,300,600],true,"all",0,0.5]` {
		t.Errorf("parsed %s", j)
	}
	// a comma list of addresses is kept as given, less the spaces around its entries
	o, err = parse(t, h, map[string]string{"tikv_status_addr": "tikv:20180, tikv2:20180 ,[::1]:20180", "pd_addr": "pd:2379"})
	if err != nil {
		t.Fatal(err)
	}
	j, _ = json.Marshal([]any{o["tikv_status_addr"], o["pd_addr"]})
	if string(j) != `["tikv:20180,tikv2:20180,[::1]:20180","pd:2379"]` {
		t.Errorf("parsed %s", j)
	}
	// the preset sets its options, an option given with -e wins over it
	o, err = parse(t, h, map[string]string{"preset": "tidb", "auto_inc": "on"})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range c.Presets["tidb"] {
		if k == "auto_inc" {
			if o[k] != true {
				t.Errorf("auto_inc=on given, preset tidb's %s won: %v", v, o[k])
			}
			continue
		}
		one, err := parse(t, h, map[string]string{k: v})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(o[k])
		b, _ := json.Marshal(one[k])
		if string(a) != string(b) {
			t.Errorf("preset tidb: %s=%s, -e %s=%s gives %s", k, a, k, v, b)
		}
	}
}

func TestPasswordFile(t *testing.T) {
	h := New(t, "")
	dir := t.TempDir()
	f := filepath.Join(dir, "pw")
	if err := os.WriteFile(f, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := parse(t, h, map[string]string{"mysql_password_file": f})
	if err != nil || o["mysql_password"] != "s3cret" {
		t.Fatalf("%v %v", o["mysql_password"], err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for env, want := range map[string]map[string]string{
		"the file is empty":    {"mysql_password_file": empty},
		"cannot read the file": {"mysql_password_file": filepath.Join(dir, "missing")},
		"not both":             {"mysql_password_file": f, "mysql_password": "x"},
	} {
		if _, err := parse(t, h, want); err == nil || !strings.Contains(err.Error(), env) {
			t.Errorf("%v: %v, want %q", want, err, env)
		}
	}
	// the password never appears in where() (the messages that name the target)
	cfg := h.Import("lib/config.js")
	opts, _ := h.Call(cfg, "parseOptions", map[string]string{"mysql_password": "s3cret"})
	w := h.MustCall(cfg, "where", opts).String()
	if strings.Contains(w, "s3cret") || !strings.Contains(w, "127.0.0.1:4000") {
		t.Errorf("where(): %s", w)
	}
	_ = sobek.Undefined
}

// A shell's own lowercase variables that are not options (the proxies; npm's npm_config_*,
// npm_package_*, ... under `npm run` or a developer's npm settings) are not refused as unknown
// options; a name close to an option still is (TestBadValuesNameTheValueAndTheValidOnes).
func TestAShellsProxyAndNpmVariablesAreNotOptions(t *testing.T) {
	h := New(t, "")
	c, _ := readContract(t, h)
	for name := range c.Options {
		if strings.HasPrefix(name, "npm_") {
			t.Fatalf("option %s starts with npm_, which parseOptions leaves to npm", name)
		}
	}
	env := map[string]string{"npm_config_cache": "/tmp/npm", "npm_package_name": "x", "npm_lifecycle_event": "test",
		"http_proxy": "http://proxy:3128", "no_proxy": "localhost", "threads": "2"}
	o, err := parse(t, h, env)
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	if j, _ := json.Marshal(o["threads"]); string(j) != "[2]" {
		t.Errorf("threads parsed as %s", j)
	}
	if _, err := parse(t, h, map[string]string{"npmconfig": "x"}); err == nil || !strings.Contains(err.Error(), "unknown option 'npmconfig'") {
		t.Errorf("npmconfig (no npm_ prefix): %v", err)
	}
}
