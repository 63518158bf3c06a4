// Command alloy-check checks compose/alloy/config.alloy without Grafana Alloy (Alloy itself,
// with over a thousand dependencies, is not built here). It uses Alloy's own syntax module,
// github.com/grafana/alloy/syntax (the parser and evaluator Alloy runs on), and schema.json, a
// table of the components, arguments, blocks and exports config.alloy uses, as Alloy's
// reference documentation of the pinned release gives them (tests/test_alloy_schemas.py
// compares the table with those pages). No Alloy source is copied here:
//
//  1. the file is parsed with Alloy's parser (syntax errors);
//  2. each component must be in the table; its body is decoded by Alloy's evaluator into a Go
//     struct type built from the table, so an unknown component, argument or block, a missing
//     required argument, a value of the wrong type (capsules included: forward_to takes only
//     a LogsReceiver), a reference to an undeclared component and an unknown function fail as
//     in Alloy; values outside a documented set (enum) fail too;
//  3. the log pipeline runs on sample discovered containers (-targets, a JSON list of label
//     sets as discovery.docker exports them): discovery.relabel's rules (replace, keep, drop),
//     then what loki.source.docker does per container (targets deduplicated by container id,
//     its labels, relabel_rules with __meta_docker_container_log_stream set, "__" labels
//     dropped). It prints each component's arguments (Alloy's names) and the label sets of the
//     resulting Loki streams as JSON. This simulation is most of this file; it stays because
//     tests/test_compose.py reads the streams to prove which containers' logs reach Loki and
//     with which labels, which no schema can say. Files likewise: local.file_match expands
//     its __path__ globs over sample paths (-files), loki.source.file ships each target's
//     labels plus filename.
//
// Usage: alloy-check [-targets targets.json] [-files a.log,b.log] config.alloy   (environment: as for Alloy)
package main

import (
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/grafana/alloy/syntax/ast"
	"github.com/grafana/alloy/syntax/parser"
	"github.com/grafana/alloy/syntax/vm"
)

//go:embed schema.json
var schemaJSON []byte

type argument struct {
	Type     string   `json:"type"`
	Required bool     `json:"required"`
	Default  *string  `json:"default"`
	Enum     []string `json:"enum"`
}

type block struct {
	Doc       string              `json:"doc"`
	Arguments map[string]argument `json:"arguments"`
	Blocks    map[string]block    `json:"blocks"`
	Exports   map[string]string   `json:"exports"`
}

// Target is a discovered target: a label set.
type Target = map[string]string

// LogsReceiver is the LogsReceiver capsule (loki.write's receiver); it names its component.
type LogsReceiver struct {
	Component string `json:"component"`
}

func (LogsReceiver) AlloyCapsule() {}

// RelabelRules is the RelabelRules capsule (discovery.relabel's rules).
type RelabelRules []map[string]any

func (RelabelRules) AlloyCapsule() {}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "alloy-check: "+format+"\n", a...)
	os.Exit(1)
}

// goType is the Go type the evaluator decodes an Alloy type into.
func goType(t string) reflect.Type {
	switch t {
	case "string":
		return reflect.TypeOf("")
	case "bool":
		return reflect.TypeOf(false)
	case "number":
		return reflect.TypeOf(float64(0))
	case "int":
		return reflect.TypeOf(0)
	case "duration":
		return reflect.TypeOf(time.Duration(0))
	case "LogsReceiver":
		return reflect.TypeOf(LogsReceiver{})
	case "RelabelRules":
		return reflect.TypeOf(RelabelRules{})
	}
	if in, ok := strings.CutPrefix(t, "list("); ok && strings.HasSuffix(in, ")") {
		return reflect.SliceOf(goType(in[:len(in)-1]))
	}
	if in, ok := strings.CutPrefix(t, "map("); ok && strings.HasSuffix(in, ")") {
		return reflect.MapOf(reflect.TypeOf(""), goType(in[:len(in)-1]))
	}
	fail("schema.json: type %q is not one alloy-check knows", t)
	return nil
}

// structType builds the struct Alloy's evaluator decodes a block into: one field per argument
// (`alloy:"name,attr"`, optional ones as pointers, so unset stays nil) and per block (a list).
func structType(b block) (reflect.Type, []string) {
	var fields []reflect.StructField
	var names []string
	for _, name := range sortedKeys(b.Arguments) {
		a := b.Arguments[name]
		t, tag := goType(a.Type), name+",attr"
		if !a.Required {
			t, tag = reflect.PointerTo(t), tag+",optional"
		}
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("F%d", len(fields)), Type: t,
			Tag: reflect.StructTag(fmt.Sprintf("alloy:%q", tag))})
		names = append(names, name)
	}
	for _, name := range sortedKeys(b.Blocks) {
		t, _ := structType(b.Blocks[name])
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("F%d", len(fields)), Type: reflect.SliceOf(t),
			Tag: reflect.StructTag(fmt.Sprintf("alloy:%q", name+",block,optional"))})
		names = append(names, name)
	}
	return reflect.StructOf(fields), names
}

// plain turns a decoded block into {Alloy name: value}: unset optional arguments take their
// documented default or are left out, durations are printed as Alloy writes them, enums are
// checked.
func plain(where string, b block, v reflect.Value) (map[string]any, error) {
	_, names := structType(b)
	out := map[string]any{}
	for i, name := range names {
		f := v.Field(i)
		if sub, isBlock := b.Blocks[name]; isBlock {
			var list []any
			for j := 0; j < f.Len(); j++ {
				m, err := plain(fmt.Sprintf("%s %s[%d]", where, name, j), sub, f.Index(j))
				if err != nil {
					return nil, err
				}
				list = append(list, m)
			}
			if list != nil {
				out[name] = list
			}
			continue
		}
		a := b.Arguments[name]
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				if a.Default != nil {
					out[name] = *a.Default
				}
				continue
			}
			f = f.Elem()
		}
		val := f.Interface()
		if d, ok := val.(time.Duration); ok {
			val = d.String()
		}
		if s, ok := val.(string); ok && a.Enum != nil && !contains(a.Enum, s) {
			return nil, fmt.Errorf("%s: %s = %q is not one of %s", where, name, s, strings.Join(a.Enum, ", "))
		}
		out[name] = val
	}
	return out, nil
}

type component struct {
	name, label string
	spec        block
	body        ast.Body
	args        map[string]any
	exports     map[string]any
}

func (c *component) id() string { return c.name + "." + c.label }

// scope is what the evaluated components export: discovery.relabel.<label>.output, ...
func scope(done []*component) *vm.Scope {
	vars := map[string]any{}
	for _, c := range done {
		parts := append(strings.Split(c.name, "."), c.label)
		m := vars
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = c.exports
	}
	return vm.NewScope(vars)
}

// evaluate decodes c's body with Alloy's evaluator and computes its exports.
func evaluate(c *component, done []*component, samples []Target, files []string) error {
	t, _ := structType(c.spec)
	args := reflect.New(t)
	if err := vm.New(c.body).Evaluate(scope(done), args.Interface()); err != nil {
		return err
	}
	m, err := plain(c.id(), c.spec, args.Elem())
	if err != nil {
		return err
	}
	c.args = m
	switch c.name {
	case "discovery.docker":
		// the sample containers stand for what the Docker engine lists (it applies the filters)
		c.exports = map[string]any{"targets": samples}
	case "discovery.relabel":
		rules := RelabelRules{}
		for _, r := range asList(m["rule"]) {
			rule := r.(map[string]any)
			if _, err := regexp.Compile(rule["regex"].(string)); err != nil {
				return fmt.Errorf("rule regex: %w", err)
			}
			rules = append(rules, rule)
		}
		out := []Target{}
		for _, t := range m["targets"].([]Target) {
			r, keep, err := relabel(t, rules)
			if err != nil {
				return err
			}
			if keep {
				out = append(out, r)
			}
		}
		c.exports = map[string]any{"output": out, "rules": rules}
	case "local.file_match":
		// the sample files stand for what is on disk; each match is a target with its path
		out := []Target{}
		for _, t := range m["path_targets"].([]Target) {
			glob := t["__path__"]
			if glob == "" {
				return fmt.Errorf("path_targets: a target has no __path__: %v", t)
			}
			for _, f := range files {
				if ok, err := path.Match(glob, f); err != nil {
					return fmt.Errorf("path_targets: __path__ %q: %w", glob, err)
				} else if ok {
					r := Target{}
					for k, v := range t {
						r[k] = v
					}
					r["__path__"] = f
					out = append(out, r)
				}
			}
		}
		c.exports = map[string]any{"targets": out}
	case "loki.write":
		c.exports = map[string]any{"receiver": LogsReceiver{Component: c.id()}}
	default:
		c.exports = map[string]any{}
	}
	for name, typ := range c.spec.Exports {
		if got := reflect.TypeOf(c.exports[name]); got != goType(typ) {
			return fmt.Errorf("export %s is a %v here, the schema's %s", name, got, typ)
		}
	}
	return nil
}

// relabel applies relabeling rules (the actions this stack uses) to one label set; keep is
// false when the target is dropped.
func relabel(lbls Target, rules RelabelRules) (out Target, keep bool, err error) {
	out = Target{}
	for k, v := range lbls {
		out[k] = v
	}
	for _, r := range rules {
		var vals []string
		for _, s := range asStrings(r["source_labels"]) {
			vals = append(vals, out[s])
		}
		val := strings.Join(vals, r["separator"].(string))
		re, err := regexp.Compile("^(?:" + r["regex"].(string) + ")$")
		if err != nil {
			return nil, false, fmt.Errorf("rule regex: %w", err)
		}
		switch r["action"] {
		case "keep":
			if !re.MatchString(val) {
				return nil, false, nil
			}
		case "drop":
			if re.MatchString(val) {
				return nil, false, nil
			}
		case "replace":
			idx := re.FindStringSubmatchIndex(val)
			if idx == nil {
				continue
			}
			tl, _ := r["target_label"].(string)
			if tl == "" {
				return nil, false, fmt.Errorf("rule: action replace needs a target_label")
			}
			target := string(re.ExpandString(nil, tl, val, idx))
			if res := string(re.ExpandString(nil, r["replacement"].(string), val, idx)); res == "" {
				delete(out, target)
			} else {
				out[target] = res
			}
		default:
			return nil, false, fmt.Errorf("rule: action %q is not simulated by alloy-check", r["action"])
		}
	}
	return out, true, nil
}

// fileStreams is what loki.source.file makes of its targets: one stream per file, with the
// target's labels ("__" ones dropped) and filename.
func fileStreams(c *component) ([]Target, error) {
	if len(asList(c.args["forward_to"])) == 0 {
		return nil, fmt.Errorf("forward_to is empty")
	}
	var out []Target
	for _, t := range c.args["targets"].([]Target) {
		if t["__path__"] == "" {
			return nil, fmt.Errorf("a target has no __path__, it would be skipped: %v", t)
		}
		final := Target{"filename": t["__path__"]}
		for k, v := range t {
			if !strings.HasPrefix(k, "__") {
				final[k] = v
			}
		}
		out = append(out, final)
	}
	return out, nil
}

// streams is what loki.source.docker makes of its targets: the label sets of the Loki streams.
func streams(c *component) ([]Target, error) {
	if len(asList(c.args["forward_to"])) == 0 {
		return nil, fmt.Errorf("forward_to is empty")
	}
	var rules RelabelRules
	if r, ok := c.args["relabel_rules"].(RelabelRules); ok {
		rules = r
	}
	var out []Target
	seen := map[string]bool{}
	for _, t := range c.args["targets"].([]Target) {
		id := t["__meta_docker_container_id"]
		if id == "" {
			return nil, fmt.Errorf("a target has no __meta_docker_container_id, it would be skipped: %v", t)
		}
		if seen[id] { // one target per container id (the docs' "Component behavior")
			continue
		}
		seen[id] = true
		lbls := Target{}
		for k, v := range t {
			lbls[k] = v
		}
		for k, v := range c.args["labels"].(map[string]string) {
			lbls[k] = v
		}
		lbls["__meta_docker_container_log_stream"] = "stdout"
		r, keep, err := relabel(lbls, rules)
		if err != nil {
			return nil, err
		}
		if !keep {
			continue
		}
		final := Target{}
		for k, v := range r {
			if !strings.HasPrefix(k, "__") {
				final[k] = v
			}
		}
		if len(final) == 0 {
			return nil, fmt.Errorf("container %s would be shipped with no labels", id)
		}
		out = append(out, final)
	}
	return out, nil
}

func main() {
	targetsFile := flag.String("targets", "", "JSON list of sample discovered targets (label sets) to run the pipeline on")
	filesFlag := flag.String("files", "", "comma-separated sample file paths for local.file_match to find")
	flag.Parse()
	if flag.NArg() != 1 {
		fail("usage: alloy-check [-targets file.json] [-files a.log,b.log] config.alloy")
	}
	var schema struct {
		Components map[string]block `json:"components"`
	}
	if err := json.Unmarshal(schemaJSON, &schema); err != nil {
		fail("schema.json: %v", err)
	}
	src, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fail("%v", err)
	}
	file, err := parser.ParseFile(flag.Arg(0), src)
	if err != nil {
		fail("syntax: %v", err)
	}
	samples := []Target{}
	if *targetsFile != "" {
		b, err := os.ReadFile(*targetsFile)
		if err != nil {
			fail("%v", err)
		}
		if err := json.Unmarshal(b, &samples); err != nil {
			fail("%s: %v", *targetsFile, err)
		}
	}

	var files []string
	if *filesFlag != "" {
		files = strings.Split(*filesFlag, ",")
	}

	// the components, by name and label
	var comps []*component
	ids := map[string]bool{}
	for _, stmt := range file.Body {
		b, ok := stmt.(*ast.BlockStmt)
		if !ok {
			fail("top level: only component blocks are expected")
		}
		name := strings.Join(b.Name, ".")
		spec, ok := schema.Components[name]
		if !ok {
			fail("%s: component %q is not in schema.json (known: %s)", name, name, strings.Join(sortedKeys(schema.Components), ", "))
		}
		if b.Label == "" {
			fail("%s: a component needs a label", name)
		}
		c := &component{name: name, label: b.Label, spec: spec, body: b.Body}
		if ids[c.id()] {
			fail("%s declared twice", c.id())
		}
		ids[c.id()] = true
		comps = append(comps, c)
	}

	// evaluate each component once the ones it references are: a round that evaluates none
	// leaves a reference to an undeclared component (or a cycle), or another error
	var done []*component
	pending := comps
	for len(pending) > 0 {
		var next []*component
		errs := map[*component]error{}
		for _, c := range pending {
			if err := evaluate(c, done, samples, files); err != nil {
				errs[c] = err
				next = append(next, c)
			} else {
				done = append(done, c)
			}
		}
		if len(next) == len(pending) { // every error: one may be what the others reference
			var lines []string
			for _, c := range next {
				lines = append(lines, fmt.Sprintf("%s: %v", c.id(), errs[c]))
			}
			fail("%s", strings.Join(lines, "\nalloy-check: "))
		}
		pending = next
	}

	var all []Target
	summary := map[string]any{}
	for _, c := range comps {
		summary[c.id()] = c.args
		var s []Target
		var err error
		switch c.name {
		case "loki.source.docker":
			s, err = streams(c)
		case "loki.source.file":
			s, err = fileStreams(c)
		}
		if err != nil {
			fail("%s: %v", c.id(), err)
		}
		all = append(all, s...)
	}
	sort.Slice(all, func(i, j int) bool { return fmt.Sprint(all[i]) < fmt.Sprint(all[j]) })
	summary["streams"] = all
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(summary); err != nil {
		fail("%v", err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func asList(v any) []any {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return nil
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out
}

func asStrings(v any) []string {
	s, _ := v.([]string)
	return s
}
