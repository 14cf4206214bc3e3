package main

import (
	"context"
	"flag"
	"testing"
)

// The command hands the backend a tracer provider built from the OTEL_* variables: with an
// exporter asked for, the consumer's spans have somewhere to go; without one, none is built.
func TestTheCommandTracesWhenTheOTELVariablesAskForIt(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	cfg, err := config(flag.NewFlagSet("seckill-backend", flag.ContinueOnError), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NewTracerProvider == nil {
		t.Fatal("the command builds no tracer provider")
	}
	tp, err := cfg.NewTracerProvider(context.Background())
	if err != nil || tp == nil {
		t.Fatalf("OTEL_TRACES_EXPORTER=console: provider %v, err %v", tp, err)
	}
	_ = tp.Shutdown(context.Background())
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	if tp, err := cfg.NewTracerProvider(context.Background()); tp != nil || err != nil {
		t.Fatalf("OTEL_TRACES_EXPORTER=none: provider %v, err %v", tp, err)
	}
}
