package runners

// idSet is a set of ids whose memory stays small for a stream's ids: an
// id that ends in a number (codex's item_41) is a bit of a bitmap of its
// prefix and suffix (what surrounds its last number), so that a stream of
// a hundred thousand items item_0, item_1... holds one bitmap of a few
// KB, not a hundred thousand strings. Any other id (none, a number with a
// leading zero, one past maxIDBit) is kept as it is.
type idSet struct {
	bits  map[idFrame][]uint64
	other map[string]bool
}

// idFrame is what surrounds the number of an id of a bitmap.
type idFrame struct{ prefix, suffix string }

// maxIDBit bounds the numbers kept as bits: a bitmap is at most 128 KiB.
const maxIDBit = 1 << 20

// split returns id's frame and number, ok false for an id kept as it is.
func (idSet) split(id string) (f idFrame, n int, ok bool) {
	end := len(id)
	for end > 0 && !isDigit(id[end-1]) {
		end--
	}
	start := end
	for start > 0 && isDigit(id[start-1]) {
		start--
	}
	if start == end || end-start > 7 || (id[start] == '0' && end-start > 1) {
		return idFrame{}, 0, false
	}
	for _, c := range id[start:end] {
		n = n*10 + int(c-'0')
	}
	if n >= maxIDBit {
		return idFrame{}, 0, false
	}
	return idFrame{id[:start], id[end:]}, n, true
}

// has reports whether id is in the set.
func (s *idSet) has(id string) bool {
	f, n, ok := s.split(id)
	if !ok {
		return s.other[id]
	}
	b := s.bits[f]
	return n/64 < len(b) && b[n/64]&(1<<(n%64)) != 0
}

// add puts id in the set.
func (s *idSet) add(id string) {
	f, n, ok := s.split(id)
	if !ok {
		if s.other == nil {
			s.other = map[string]bool{}
		}
		s.other[id] = true
		return
	}
	if s.bits == nil {
		s.bits = map[idFrame][]uint64{}
	}
	b := s.bits[f]
	if n/64 >= len(b) {
		b = append(b, make([]uint64, n/64+1-len(b))...)
	}
	b[n/64] |= 1 << (n % 64)
	s.bits[f] = b
}
