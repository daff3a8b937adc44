package httpspec

// Reasons of the http kind's errors (synth.Error.Reason), beside the ones
// every kind shares (synth.ReasonTimeout, synth.ReasonResponseNotJSON, …).
const (
	// ReasonEgressDenied: the SSRF guard or the tool's allowlist refused a
	// host or address; nothing was sent to it.
	ReasonEgressDenied = "egress-denied"
	// ReasonUpstreamStatus: the upstream answered outside successStatus.
	ReasonUpstreamStatus = "upstream-status"
	// ReasonResponseNotText: parseJson is false and the answer is not
	// UTF-8 text.
	ReasonResponseNotText = "response-not-text"
	// ReasonResponseTooLarge: the answer is over the body cap.
	ReasonResponseTooLarge = "response-too-large"
	// ReasonResponseTruncated: the answer broke off before its end.
	ReasonResponseTruncated = "response-truncated"
	// ReasonInvalidURL: the expanded URL is not one the template allows.
	ReasonInvalidURL = "invalid-url"
	// ReasonInvalidHeader: a filled header holds CR, LF or NUL.
	ReasonInvalidHeader = "invalid-header"
	// ReasonMissingValue: a simple {name} has no value in the input.
	ReasonMissingValue = "missing-value"
	// ReasonNotPrimitive: a simple {name} got an array or an object.
	ReasonNotPrimitive = "not-primitive"
	// ReasonFetchFailed: the request could not be sent or answered.
	ReasonFetchFailed = "fetch-failed"
	// ReasonTooManyRedirects: more redirects than the client allows.
	ReasonTooManyRedirects = "too-many-redirects"
)
