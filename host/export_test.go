package host

// InFlightCalls returns how many guest calls are running now, on any module:
// a call counts from just before its instance is created until the host's
// call into it has returned. Test hook for the end-to-end benchmarks.
func (s *Server) InFlightCalls() int {
	s.reg.mu.Lock()
	defer s.reg.mu.Unlock()
	n := 0
	for _, set := range s.reg.calls {
		n += len(set)
	}
	return n
}
