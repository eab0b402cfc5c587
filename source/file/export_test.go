package file

// Compact forgets the remembered history, as etcd compaction does: a watch
// or a page from any earlier resourceVersion then gets 410 Gone. For the
// conformance suite.
func (s *Source[T]) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history = nil
	s.floor = s.rv
}
