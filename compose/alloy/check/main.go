// Command alloy-check checks compose/alloy/config.alloy without Grafana Alloy: Alloy's source
// downloads from the Go module proxy (tests/test_alloy_schemas.py reads it), but Alloy itself,
// with over a thousand dependencies, is not built here. It uses Alloy's own syntax module
// (github.com/grafana/alloy/syntax: the parser and the evaluator Alloy runs on) and:
//
//  1. parses the file with Alloy's parser (syntax errors);
//  2. accepts only the components this stack uses, each decoded by Alloy's evaluator into a
//     copy of that component's Arguments schema (attribute and block names, required ones and
//     types copied from grafana/alloy's internal/component sources), so unknown or missing
//     attributes, wrong types and bad references to other components fail as Alloy would;
//  3. runs the pipeline on sample discovered containers (-targets, JSON list of label sets,
//     as discovery.docker exports them): discovery.relabel's rules (replace, keep, drop),
//     then what loki.source.docker does per log line (its labels, relabel_rules with
//     __meta_docker_container_log_stream set, labels starting with "__" dropped), and prints
//     the label sets of the resulting Loki streams as JSON.
//
// Usage: alloy-check [-targets targets.json] config.alloy   (environment: as for Alloy)
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/grafana/alloy/syntax/ast"
	"github.com/grafana/alloy/syntax/parser"
	"github.com/grafana/alloy/syntax/vm"
)

// ---- Component schemas (copied from grafana/alloy internal/component/..., Arguments) ----
//
// Checked against grafana/alloy v1.19.2 (ALLOY_IMAGE in .env). Each schema names its source
// file and type on an "alloy-source:" line; tests/test_alloy_schemas.py compares every one with
// that file of the Alloy version .env pins (attribute and block names, required or optional),
// and fails when .env pins another version than the one above until it is re-checked.

// Target is discovery.Target: a label set.
type Target map[string]string

// RelabelConfig is internal/component/common/relabel.Config.
// alloy-source: internal/component/common/relabel/relabel.go Config
type RelabelConfig struct {
	SourceLabels []string `alloy:"source_labels,attr,optional"`
	Separator    string   `alloy:"separator,attr,optional"`
	Regex        string   `alloy:"regex,attr,optional"`
	Modulus      uint64   `alloy:"modulus,attr,optional"`
	TargetLabel  string   `alloy:"target_label,attr,optional"`
	Replacement  string   `alloy:"replacement,attr,optional"`
	Action       string   `alloy:"action,attr,optional"`
}

// SetToDefault mirrors relabel.Config's defaults.
func (c *RelabelConfig) SetToDefault() {
	*c = RelabelConfig{Action: "replace", Separator: ";", Regex: "(.*)", Replacement: "$1"}
}

var relabelActions = map[string]bool{"replace": true, "keep": true, "drop": true, "hashmod": true,
	"labelmap": true, "labeldrop": true, "labelkeep": true, "lowercase": true, "uppercase": true,
	"keepequal": true, "dropequal": true}

var relabelTarget = regexp.MustCompile(`^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$`)

// Validate mirrors the parts of relabel.Config.Validate that apply to the actions we use.
func (c *RelabelConfig) Validate() error {
	if !relabelActions[c.Action] {
		return fmt.Errorf("unrecognized action type %q", c.Action)
	}
	if _, err := regexp.Compile("^(?:" + c.Regex + ")$"); err != nil {
		return fmt.Errorf("regex %q: %w", c.Regex, err)
	}
	if c.Action == "replace" && (c.TargetLabel == "" || !relabelTarget.MatchString(c.TargetLabel)) {
		return fmt.Errorf("%q is invalid 'target_label' for replace action", c.TargetLabel)
	}
	return nil
}

// Rules is relabel.Rules, a capsule (opaque) value in Alloy.
type Rules []*RelabelConfig

func (Rules) AlloyCapsule() {}

// LogsReceiver stands for loki.LogsReceiver (a capsule); name says which component exports it.
type LogsReceiver struct{ name string }

func (LogsReceiver) AlloyCapsule() {}

// DockerFilter is discovery/docker.Filter.
// alloy-source: internal/component/discovery/docker/docker.go Filter
type DockerFilter struct {
	Name   string   `alloy:"name,attr"`
	Values []string `alloy:"values,attr"`
}

// DiscoveryDocker is discovery/docker.Arguments (without the squashed HTTP client options).
// alloy-source: internal/component/discovery/docker/docker.go Arguments
type DiscoveryDocker struct {
	Host               string         `alloy:"host,attr"`
	Port               int            `alloy:"port,attr,optional"`
	HostNetworkingHost string         `alloy:"host_networking_host,attr,optional"`
	RefreshInterval    time.Duration  `alloy:"refresh_interval,attr,optional"`
	Filters            []DockerFilter `alloy:"filter,block,optional"`
}

// DiscoveryRelabel is discovery/relabel.Arguments.
// alloy-source: internal/component/discovery/relabel/relabel.go Arguments
type DiscoveryRelabel struct {
	Targets        []Target         `alloy:"targets,attr"`
	RelabelConfigs []*RelabelConfig `alloy:"rule,block,optional"`
}

// LokiSourceDocker is loki/source/docker.Arguments (without the HTTP client block).
// alloy-source: internal/component/loki/source/docker/docker.go Arguments
type LokiSourceDocker struct {
	Host            string            `alloy:"host,attr"`
	Targets         []Target          `alloy:"targets,attr"`
	ForwardTo       []LogsReceiver    `alloy:"forward_to,attr"`
	Labels          map[string]string `alloy:"labels,attr,optional"`
	RelabelRules    Rules             `alloy:"relabel_rules,attr,optional"`
	RefreshInterval time.Duration     `alloy:"refresh_interval,attr,optional"`
}

// LokiEndpoint is loki/write.EndpointOptions (without the HTTP client and queue options).
// alloy-source: internal/component/loki/write/types.go EndpointOptions
type LokiEndpoint struct {
	Name              string            `alloy:"name,attr,optional"`
	URL               string            `alloy:"url,attr"`
	BatchWait         time.Duration     `alloy:"batch_wait,attr,optional"`
	BatchSize         string            `alloy:"batch_size,attr,optional"`
	RemoteTimeout     time.Duration     `alloy:"remote_timeout,attr,optional"`
	Headers           map[string]string `alloy:"headers,attr,optional"`
	MinBackoff        time.Duration     `alloy:"min_backoff_period,attr,optional"`
	MaxBackoff        time.Duration     `alloy:"max_backoff_period,attr,optional"`
	MaxBackoffRetries int               `alloy:"max_backoff_retries,attr,optional"`
	TenantID          string            `alloy:"tenant_id,attr,optional"`
	RetryOnHTTP429    bool              `alloy:"retry_on_http_429,attr,optional"`
}

// LokiWrite is loki/write.Arguments (without the WAL block).
// alloy-source: internal/component/loki/write/write.go Arguments
type LokiWrite struct {
	Endpoints      []LokiEndpoint    `alloy:"endpoint,block,optional"`
	ExternalLabels map[string]string `alloy:"external_labels,attr,optional"`
	MaxStreams     int               `alloy:"max_streams,attr,optional"`
}

// ---- The checker ----

type component struct {
	name, label string
	block       *ast.BlockStmt
	args        any
	exports     map[string]any
}

func (c *component) id() string { return c.name + "." + c.label }

var known = map[string]func() any{
	"discovery.docker":   func() any { return &DiscoveryDocker{RefreshInterval: time.Minute, Port: 80} },
	"discovery.relabel":  func() any { return &DiscoveryRelabel{} },
	"loki.source.docker": func() any { return &LokiSourceDocker{RefreshInterval: 60 * time.Second} },
	"loki.write":         func() any { return &LokiWrite{} },
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "alloy-check: "+format+"\n", a...)
	os.Exit(1)
}

// refs returns the dotted names an expression reads (a.b.c for a.b.c.d accesses).
func refs(n ast.Node) []string {
	var out []string
	var walk func(n ast.Node)
	path := func(e ast.Expr) (string, bool) {
		var parts []string
		for {
			switch x := e.(type) {
			case *ast.AccessExpr:
				parts = append([]string{x.Name.Name}, parts...)
				e = x.Value
				continue
			case *ast.IdentifierExpr:
				parts = append([]string{x.Ident.Name}, parts...)
				return strings.Join(parts, "."), true
			}
			return "", false
		}
	}
	walk = func(n ast.Node) {
		switch x := n.(type) {
		case ast.Body:
			for _, s := range x {
				walk(s)
			}
		case *ast.BlockStmt:
			walk(x.Body)
		case *ast.AttributeStmt:
			walk(x.Value)
		case *ast.AccessExpr:
			if p, ok := path(x); ok {
				out = append(out, p)
			} else {
				walk(x.Value)
			}
		case *ast.IdentifierExpr:
			out = append(out, x.Ident.Name)
		case *ast.ArrayExpr:
			for _, e := range x.Elements {
				walk(e)
			}
		case *ast.ObjectExpr:
			for _, f := range x.Fields {
				walk(f.Value)
			}
		case *ast.IndexExpr:
			walk(x.Value)
			walk(x.Index)
		case *ast.CallExpr:
			walk(x.Value)
			for _, a := range x.Args {
				walk(a)
			}
		case *ast.UnaryExpr:
			walk(x.Value)
		case *ast.BinaryExpr:
			walk(x.Left)
			walk(x.Right)
		case *ast.ParenExpr:
			walk(x.Inner)
		}
	}
	walk(n)
	return out
}

// scope builds the nested object Alloy exposes: discovery.relabel.<label>.output, ...
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

// relabel applies Prometheus relabeling (the actions this stack uses) to one label set;
// ok is false when the target is dropped.
func relabel(lbls Target, rules []*RelabelConfig) (Target, bool) {
	out := Target{}
	for k, v := range lbls {
		out[k] = v
	}
	for _, r := range rules {
		vals := make([]string, len(r.SourceLabels))
		for i, s := range r.SourceLabels {
			vals[i] = out[s]
		}
		val := strings.Join(vals, r.Separator)
		re := regexp.MustCompile("^(?:" + r.Regex + ")$")
		switch r.Action {
		case "keep":
			if !re.MatchString(val) {
				return nil, false
			}
		case "drop":
			if re.MatchString(val) {
				return nil, false
			}
		case "replace":
			idx := re.FindStringSubmatchIndex(val)
			if idx == nil {
				continue
			}
			target := string(re.ExpandString(nil, r.TargetLabel, val, idx))
			res := string(re.ExpandString(nil, r.Replacement, val, idx))
			if res == "" {
				delete(out, target)
			} else {
				out[target] = res
			}
		default:
			fail("action %q is not simulated by alloy-check", r.Action)
		}
	}
	return out, true
}

func main() {
	targetsFile := flag.String("targets", "", "JSON list of sample discovered targets (label sets) to run the pipeline on")
	flag.Parse()
	if flag.NArg() != 1 {
		fail("usage: alloy-check [-targets file.json] config.alloy")
	}
	src, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fail("%v", err)
	}
	file, err := parser.ParseFile(flag.Arg(0), src)
	if err != nil {
		fail("syntax: %v", err)
	}

	var samples []Target
	if *targetsFile != "" {
		b, err := os.ReadFile(*targetsFile)
		if err != nil {
			fail("%v", err)
		}
		if err := json.Unmarshal(b, &samples); err != nil {
			fail("%s: %v", *targetsFile, err)
		}
	}

	// 1. the components, by name and label
	var comps []*component
	byID := map[string]*component{}
	for _, stmt := range file.Body {
		b, ok := stmt.(*ast.BlockStmt)
		if !ok {
			fail("top level: only component blocks are expected")
		}
		name := strings.Join(b.Name, ".")
		if _, ok := known[name]; !ok {
			fail("%s: component %q is not one this stack uses (known: discovery.docker, discovery.relabel, loki.source.docker, loki.write)", name, name)
		}
		if b.Label == "" {
			fail("%s: a component needs a label", name)
		}
		c := &component{name: name, label: b.Label, block: b}
		if byID[c.id()] != nil {
			fail("%s declared twice", c.id())
		}
		byID[c.id()] = c
		comps = append(comps, c)
	}

	// 2. evaluate in dependency order (references must name a declared component)
	deps := map[*component][]*component{}
	for _, c := range comps {
		for _, r := range refs(c.block.Body) {
			parts := strings.Split(r, ".")
			var dep *component
			for i := len(parts); i >= 2; i-- {
				if d := byID[strings.Join(parts[:i], ".")]; d != nil {
					dep = d
					break
				}
			}
			if dep != nil {
				deps[c] = append(deps[c], dep)
				continue
			}
			if _, isComp := map[string]bool{"discovery": true, "loki": true, "prometheus": true, "otelcol": true}[parts[0]]; isComp {
				fail("%s: reference %s names no declared component", c.id(), r)
			}
			// anything else must be the standard library (sys.env, ...): the evaluator checks it
		}
	}
	var done []*component
	evaluated := map[*component]bool{}
	for len(done) < len(comps) {
		progress := false
		for _, c := range comps {
			if evaluated[c] {
				continue
			}
			ready := true
			for _, d := range deps[c] {
				ready = ready && evaluated[d]
			}
			if !ready {
				continue
			}
			args := known[c.name]()
			if err := vm.New(c.block.Body).Evaluate(scope(done), args); err != nil {
				fail("%s: %v", c.id(), err)
			}
			c.args = args
			if err := validate(c, samples); err != nil {
				fail("%s: %v", c.id(), err)
			}
			evaluated[c] = true
			done = append(done, c)
			progress = true
		}
		if !progress {
			fail("components reference each other in a cycle")
		}
	}

	// 3. the Loki streams the sample targets become
	var streams []Target
	writers := map[string]bool{}
	for _, c := range comps {
		if c.name == "loki.write" {
			writers["loki.write."+c.label+".receiver"] = true
		}
	}
	for _, c := range comps {
		a, ok := c.args.(*LokiSourceDocker)
		if !ok {
			continue
		}
		if len(a.ForwardTo) == 0 {
			fail("%s: forward_to is empty", c.id())
		}
		for _, r := range a.ForwardTo {
			if !writers[r.name] {
				fail("%s: forward_to %s is not a loki.write receiver", c.id(), r.name)
			}
		}
		seen := map[string]bool{}
		for _, t := range a.Targets {
			id := t["__meta_docker_container_id"]
			if id == "" {
				fail("%s: a target has no __meta_docker_container_id, loki.source.docker would skip it: %v", c.id(), t)
			}
			if seen[id] {
				continue
			}
			seen[id] = true
			lbls := Target{}
			for k, v := range t {
				lbls[k] = v
			}
			for k, v := range a.Labels {
				if _, exists := lbls[k]; !exists {
					lbls[k] = v
				}
			}
			lbls["__meta_docker_container_log_stream"] = "stdout"
			out, keep := relabel(lbls, a.RelabelRules)
			if !keep {
				continue
			}
			final := Target{}
			for k, v := range out {
				if !strings.HasPrefix(k, "__") {
					final[k] = v
				}
			}
			if len(final) == 0 {
				fail("%s: container %s would be shipped with no labels", c.id(), id)
			}
			streams = append(streams, final)
		}
	}
	sort.Slice(streams, func(i, j int) bool { return fmt.Sprint(streams[i]) < fmt.Sprint(streams[j]) })

	summary := map[string]any{"streams": streams}
	for _, c := range comps {
		summary[c.id()] = c.args
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(summary); err != nil {
		fail("%v", err)
	}
}

// validate runs the components' own Validate checks and computes their exports.
func validate(c *component, samples []Target) error {
	switch a := c.args.(type) {
	case *DiscoveryDocker:
		if a.Host == "" {
			return fmt.Errorf("host attribute must not be empty")
		}
		if _, err := url.Parse(a.Host); err != nil {
			return fmt.Errorf("parsing host attribute: %w", err)
		}
		if a.RefreshInterval <= 0 {
			return fmt.Errorf("refresh_interval must be greater than 0")
		}
		// the sample containers stand for what the Docker engine would list (the filters
		// are applied by the engine; the tests check their values)
		c.exports = map[string]any{"targets": samples}
	case *DiscoveryRelabel:
		for _, r := range a.RelabelConfigs {
			if err := r.Validate(); err != nil {
				return err
			}
		}
		var out []Target
		for _, t := range a.Targets {
			if r, keep := relabel(t, a.RelabelConfigs); keep {
				out = append(out, r)
			}
		}
		if out == nil {
			out = []Target{}
		}
		c.exports = map[string]any{"output": out, "rules": Rules(a.RelabelConfigs)}
	case *LokiSourceDocker:
		if _, err := url.Parse(a.Host); err != nil {
			return fmt.Errorf("failed to parse Docker host %q: %w", a.Host, err)
		}
		if a.RefreshInterval <= 0 {
			return fmt.Errorf("refresh_interval must be positive, got %q", a.RefreshInterval)
		}
		c.exports = map[string]any{}
	case *LokiWrite:
		if len(a.Endpoints) == 0 {
			return fmt.Errorf("at least one endpoint must be configured")
		}
		for _, e := range a.Endpoints {
			u, err := url.Parse(e.URL)
			if err != nil || u.Scheme == "" || u.Host == "" {
				return fmt.Errorf("endpoint url %q is not an absolute URL", e.URL)
			}
		}
		c.exports = map[string]any{"receiver": LogsReceiver{name: c.id() + ".receiver"}}
	}
	return nil
}
