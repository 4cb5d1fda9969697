package host

// InFlightCalls returns how many guest calls are running now, on any module:
// a call counts from just before its instance is created until it has
// ended. Test hook for the end-to-end benchmarks.
func (s *Server) InFlightCalls() int { return s.rt.Running() }

// CompileCacheDir is the compiled-code cache the package's test servers
// share (see TestMain).
func CompileCacheDir() string { return testCacheDir }
