module github.com/statsgate/statsgate

go 1.26.7

// Collector core and contrib modules are required at the versions the distro
// resolves (builder-config.yaml decides them), so that the unit tests run the
// code that ships; `make versions`, part of `make test`, fails when any of them
// drifts from _build/go.mod. A module held back here would need its reason
// written next to it.
require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/gobwas/glob v0.2.3
	github.com/hashicorp/golang-lru/v2 v2.0.7
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.72.1
	github.com/prometheus/otlptranslator v1.0.0
	github.com/stretchr/testify v1.12.1
	go.opentelemetry.io/collector/component v1.70.0
	go.opentelemetry.io/collector/component/componentstatus v0.164.0
	go.opentelemetry.io/collector/component/componenttest v0.164.0
	go.opentelemetry.io/collector/config/confighttp v0.164.0
	go.opentelemetry.io/collector/confmap v1.70.0
	go.opentelemetry.io/collector/consumer v1.70.0
	go.opentelemetry.io/collector/consumer/consumertest v0.164.0
	go.opentelemetry.io/collector/exporter v1.70.0
	go.opentelemetry.io/collector/exporter/exporterhelper v0.164.0
	go.opentelemetry.io/collector/exporter/exportertest v0.164.0
	go.opentelemetry.io/collector/pdata v1.70.0
	go.opentelemetry.io/collector/processor v1.70.0
	go.opentelemetry.io/collector/processor/processortest v0.164.0
	go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc v0.72.0
	go.opentelemetry.io/otel v1.47.0
	go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc v1.47.0
	go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp v1.47.0
	go.opentelemetry.io/otel/metric v1.47.0
	go.opentelemetry.io/otel/sdk v1.47.0
	go.opentelemetry.io/otel/sdk/metric v1.47.0
	go.opentelemetry.io/otel/trace v1.47.0
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.28.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/hashicorp/memberlist v0.7.0
	github.com/klauspost/compress v1.20.3
	github.com/klauspost/pgzip v1.3.0
	github.com/open-telemetry/opentelemetry-collector-contrib/pkg/resourcetotelemetry v0.164.1
	github.com/prometheus/prometheus v0.316.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2
	go.opentelemetry.io/collector/client v1.70.0
	go.opentelemetry.io/collector/config/configauth v1.70.0
	go.opentelemetry.io/collector/config/configoptional v1.70.0
	go.opentelemetry.io/collector/extension v1.70.0
	go.opentelemetry.io/collector/extension/extensionauth v1.70.0
	go.opentelemetry.io/collector/featuregate v1.70.0
	go.yaml.in/yaml/v3 v3.0.5
	golang.org/x/net v0.61.0
)

require (
	github.com/Microsoft/go-winio v0.6.4 // indirect
	github.com/cenkalti/backoff/v5 v5.0.3 // indirect
	github.com/cenkalti/backoff/v7 v7.0.1 // indirect
	github.com/felixge/httpsnoop v1.1.0 // indirect
	github.com/foxboron/go-tpm-keyfiles v0.0.0-20251226215517-609e4778396f // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/go-viper/mapstructure/v2 v2.5.0 // indirect
	github.com/golang/snappy v1.0.0 // indirect
	github.com/google/btree v1.1.3 // indirect
	github.com/google/go-tpm v0.9.8 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grafana/regexp v0.0.0-20250905093917-f7b3be9d1853 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.32.0 // indirect
	github.com/hashicorp/errwrap v1.1.0 // indirect
	github.com/hashicorp/go-immutable-radix v1.3.1 // indirect
	github.com/hashicorp/go-metrics v0.7.0 // indirect
	github.com/hashicorp/go-msgpack/v2 v2.1.5 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	github.com/hashicorp/go-sockaddr v1.0.7 // indirect
	github.com/hashicorp/go-version v1.9.0 // indirect
	github.com/hashicorp/golang-lru v1.0.2 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/knadh/koanf/maps v0.1.3 // indirect
	github.com/knadh/koanf/providers/confmap v1.0.1 // indirect
	github.com/knadh/koanf/v2 v2.3.8 // indirect
	github.com/miekg/dns v1.1.73 // indirect
	github.com/mitchellh/copystructure v1.2.0 // indirect
	github.com/mitchellh/reflectwalk v1.0.2 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/rs/cors v1.11.1 // indirect
	github.com/sean-/seed v0.0.0-20170313163322-e2103e2c3529 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/collector/config/configcompression v1.70.0 // indirect
	go.opentelemetry.io/collector/config/configmiddleware v1.70.0 // indirect
	go.opentelemetry.io/collector/config/confignet v1.70.0 // indirect
	go.opentelemetry.io/collector/config/configopaque v1.70.0 // indirect
	go.opentelemetry.io/collector/config/configretry v1.70.0 // indirect
	go.opentelemetry.io/collector/config/configtls v1.70.0 // indirect
	go.opentelemetry.io/collector/consumer/consumererror v0.164.0 // indirect
	go.opentelemetry.io/collector/consumer/xconsumer v0.164.0 // indirect
	go.opentelemetry.io/collector/exporter/xexporter v0.164.0 // indirect
	go.opentelemetry.io/collector/extension/extensionmiddleware v0.164.0 // indirect
	go.opentelemetry.io/collector/extension/xextension v0.164.0 // indirect
	go.opentelemetry.io/collector/internal/componentalias v0.164.0 // indirect
	go.opentelemetry.io/collector/pdata/pprofile v0.164.0 // indirect
	go.opentelemetry.io/collector/pdata/testdata v0.164.0 // indirect
	go.opentelemetry.io/collector/pdata/xpdata v0.164.0 // indirect
	go.opentelemetry.io/collector/pipeline v1.70.0 // indirect
	go.opentelemetry.io/collector/pipeline/xpipeline v0.164.0 // indirect
	go.opentelemetry.io/collector/processor/xprocessor v0.164.0 // indirect
	go.opentelemetry.io/collector/receiver v1.70.0 // indirect
	go.opentelemetry.io/collector/receiver/receivertest v0.164.0 // indirect
	go.opentelemetry.io/collector/receiver/xreceiver v0.164.0 // indirect
	go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp v0.72.0 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/proto/otlp v1.11.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20261019180522-ce908d29299b // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261012220534-4341edf3f941 // indirect
)
