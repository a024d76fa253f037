package runs

// DecodeSummary is decodeSummary, for the benchmarks of package runs_test.
var DecodeSummary = decodeSummary
