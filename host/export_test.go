package host

// CompileCacheDir is the compiled-code cache the package's test servers
// share (see TestMain).
func CompileCacheDir() string { return testCacheDir }
