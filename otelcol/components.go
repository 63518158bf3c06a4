package main

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/filelogreceiver"
)

// components: what the builder would generate for this list, and nothing else. filelog reads
// the stack's log files; file_storage keeps each file's read offset across restarts (as
// promtail's positions file did); otlphttp sends to Loki's native OTLP endpoint. No processors:
// the receivers set every label as a resource attribute themselves.
func components() (otelcol.Factories, error) {
	var err error
	factories := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	if factories.Extensions, err = otelcol.MakeFactoryMap[extension.Factory](filestorage.NewFactory()); err != nil {
		return otelcol.Factories{}, err
	}
	if factories.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](filelogreceiver.NewFactory()); err != nil {
		return otelcol.Factories{}, err
	}
	if factories.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](otlphttpexporter.NewFactory()); err != nil {
		return otelcol.Factories{}, err
	}
	// the module of each component, which `otelcol-tbs components` prints
	factories.ExtensionModules = map[component.Type]string{
		filestorage.NewFactory().Type(): "github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage v0.165.1",
	}
	factories.ReceiverModules = map[component.Type]string{
		filelogreceiver.NewFactory().Type(): "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/filelogreceiver v0.165.1",
	}
	factories.ExporterModules = map[component.Type]string{
		otlphttpexporter.NewFactory().Type(): "go.opentelemetry.io/collector/exporter/otlphttpexporter v0.165.0",
	}
	return factories, nil
}
