// Command otelcol is the local stack's log shipper: a lean OpenTelemetry Collector with only the
// components the stack uses (components.go), in the shape the collector's builder (ocb) generates.
// It replaces promtail, which reached its end of life on 2026-03-02. scripts/build builds it
// (versions in go.mod, the release in scripts/lib/versions.sh OTELCOL_VERSION); scripts/stack
// runs it with otelcol/local.yaml, which tidbbench/gen/runtime.py writes from runtime/stack.json.
package main

import (
	"os"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/otelcol"
)

// version is set by scripts/build (-ldflags -X main.version=...) to the collector release.
var version = "dev"

func main() {
	info := component.BuildInfo{
		Command:     "otelcol-tbs",
		Description: "tidb-bench-stack's log shipper (OpenTelemetry Collector: filelog receiver, otlphttp exporter)",
		Version:     version,
	}
	set := otelcol.CollectorSettings{
		BuildInfo: info,
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				// file: the config, env: ${env:STACK_LOGS} and ${env:OTELCOL_DATA} in it
				ProviderFactories: []confmap.ProviderFactory{envprovider.NewFactory(), fileprovider.NewFactory()},
			},
		},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		// cobra has printed the error already
		os.Exit(1)
	}
}
