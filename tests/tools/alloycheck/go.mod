module tidb-bench-stack/tests/tools/alloycheck

go 1.26.5

require github.com/grafana/alloy/syntax v0.1.1

require (
	github.com/blang/semver/v4 v4.0.0 // indirect
	github.com/fatih/color v1.19.0 // indirect
	github.com/mattn/go-colorable v0.1.15 // indirect
	github.com/mattn/go-isatty v0.0.22 // indirect
	github.com/ohler55/ojg v1.28.1 // indirect
	golang.org/x/sys v0.46.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
