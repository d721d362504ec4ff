// Package common holds what every fixture generator variant shares: the gRPC
// test service, the fixed call mix, the in-process OTLP capture server, the
// MeterProvider wiring to the real OTLP exporter, and the writing of the
// fixture and manifest files.
//
// Its requirements are kept at the oldest versions any variant uses, so that
// each variant module decides the versions of the libraries it captures.
package common
