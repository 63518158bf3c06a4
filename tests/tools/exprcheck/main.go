// exprcheck parses the PromQL and LogQL expressions of the dashboards with the real parsers
// (github.com/prometheus/prometheus/promql/parser at the stack's Prometheus release, see
// go.mod, and Loki's logql/syntax) and reports, for every expression, whether it parses and
// which metric selectors, label matchers and grouping labels it uses.
// tests/test_dashboards.py drives it.
//
// Input (stdin): a JSON array of {"id": "...", "lang": "promql"|"logql", "expr": "..."}.
// Output (stdout): a JSON array of results in the same order.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/grafana/loki/v3/pkg/logql/syntax"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type input struct {
	ID   string `json:"id"`
	Lang string `json:"lang"`
	Expr string `json:"expr"`
}

type matcher struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

type selector struct {
	Metric   string    `json:"metric"`
	Matchers []matcher `json:"matchers"`
}

type grouping struct {
	Op      string   `json:"op"`
	Without bool     `json:"without"`
	Labels  []string `json:"labels"`
	Metrics []string `json:"metrics"`
}

type result struct {
	ID        string     `json:"id"`
	OK        bool       `json:"ok"`
	Error     string     `json:"error,omitempty"`
	Kind      string     `json:"kind,omitempty"`
	Selectors []selector `json:"selectors"`
	Groupings []grouping `json:"groupings"`
	// Labels named by label_replace/label_join as sources (they must exist on the input).
	SourceLabels []string `json:"source_labels"`
}

func convMatchers(ms []*labels.Matcher) (string, []matcher) {
	metric := ""
	out := []matcher{}
	for _, m := range ms {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			metric = m.Value
			continue
		}
		out = append(out, matcher{Name: m.Name, Type: m.Type.String(), Value: m.Value})
	}
	return metric, out
}

func metricsUnder(n parser.Node) []string {
	seen := map[string]bool{}
	out := []string{}
	parser.Inspect(n, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			name, _ := convMatchers(vs.LabelMatchers)
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
		return nil
	})
	return out
}

func checkPromQL(in input) result {
	r := result{ID: in.ID, Selectors: []selector{}, Groupings: []grouping{}, SourceLabels: []string{}}
	p := parser.NewParser(parser.Options{})
	expr, err := p.ParseExpr(in.Expr)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.OK = true
	r.Kind = string(expr.Type())
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			name, ms := convMatchers(n.LabelMatchers)
			r.Selectors = append(r.Selectors, selector{Metric: name, Matchers: ms})
		case *parser.AggregateExpr:
			g := grouping{Op: n.Op.String(), Without: n.Without, Labels: n.Grouping, Metrics: metricsUnder(n.Expr)}
			if g.Labels == nil {
				g.Labels = []string{}
			}
			r.Groupings = append(r.Groupings, g)
		case *parser.BinaryExpr:
			if n.VectorMatching != nil && len(n.VectorMatching.MatchingLabels) > 0 && n.VectorMatching.On {
				g := grouping{Op: "on", Labels: n.VectorMatching.MatchingLabels, Metrics: metricsUnder(n)}
				r.Groupings = append(r.Groupings, g)
			}
		case *parser.Call:
			switch n.Func.Name {
			case "label_replace":
				if s, ok := n.Args[3].(*parser.StringLiteral); ok && s.Val != "" {
					r.SourceLabels = append(r.SourceLabels, s.Val)
				}
			case "label_join":
				for _, a := range n.Args[3:] {
					if s, ok := a.(*parser.StringLiteral); ok {
						r.SourceLabels = append(r.SourceLabels, s.Val)
					}
				}
			}
		}
		return nil
	})
	return r
}

func checkLogQL(in input) result {
	r := result{ID: in.ID, Selectors: []selector{}, Groupings: []grouping{}, SourceLabels: []string{}}
	expr, err := syntax.ParseExpr(in.Expr)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.OK = true
	switch e := expr.(type) {
	case syntax.SampleExpr:
		r.Kind = "metric"
		sel, err := e.Selector()
		if err == nil {
			_, ms := convMatchers(sel.Matchers())
			r.Selectors = append(r.Selectors, selector{Matchers: ms})
		}
	case syntax.LogSelectorExpr:
		r.Kind = "log"
		_, ms := convMatchers(e.Matchers())
		r.Selectors = append(r.Selectors, selector{Matchers: ms})
	default:
		r.Kind = fmt.Sprintf("%T", expr)
	}
	return r
}

func main() {
	var ins []input
	if err := json.NewDecoder(os.Stdin).Decode(&ins); err != nil {
		fmt.Fprintln(os.Stderr, "exprcheck: reading input:", err)
		os.Exit(2)
	}
	out := make([]result, 0, len(ins))
	for _, in := range ins {
		switch in.Lang {
		case "promql":
			out = append(out, checkPromQL(in))
		case "logql":
			out = append(out, checkLogQL(in))
		default:
			out = append(out, result{ID: in.ID, Error: "unknown lang " + in.Lang})
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "exprcheck:", err)
		os.Exit(2)
	}
}
