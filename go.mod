module github.com/httptools/httptools

go 1.26.0

require (
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/tidwall/gjson v1.20.4
	golang.org/x/net v0.63.0
	golang.org/x/text v0.44.0
)

require (
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.3.0 // indirect
)
