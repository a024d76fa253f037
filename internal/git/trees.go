package git

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Trees maps each of the commits shas names to its tree. A commit whose
// loose object is in the repository's own object directory is read there,
// without a process (the commits a run imports are loose: a pack of fewer
// than unpackLimit objects is unpacked); one git log reads the others.
func (r Repo) Trees(ctx context.Context, shas []string) (map[string]string, error) {
	trees := make(map[string]string, len(shas))
	var rest []string
	for _, sha := range shas {
		if tree := r.looseTree(sha); tree != "" {
			trees[sha] = tree
		} else {
			rest = append(rest, sha)
		}
	}
	if len(rest) == 0 {
		return trees, nil
	}
	out, err := r.Run(ctx, append([]string{"log", "--no-walk=unsorted", "--format=%H %T", "--end-of-options"}, rest...)...)
	if err != nil {
		return trees, err
	}
	for _, line := range strings.Split(out, "\n") {
		if sha, tree, ok := strings.Cut(line, " "); ok {
			trees[sha] = tree
		}
	}
	return trees, nil
}

// looseTree is the tree of the commit sha as its loose object says
// ("commit <size>\0tree <sha>\n..."), "" when the object directory of
// the repository (known only when OpenAt or AddWorktree learned it) has
// no loose object of that name, or it is not a commit's.
func (r Repo) looseTree(sha string) string {
	if r.common == "" || !IsOID(sha) {
		return ""
	}
	f, err := openRegular(filepath.Join(r.common, "objects", sha[:2], sha[2:]))
	if err != nil {
		return ""
	}
	defer f.Close()
	z, err := zlib.NewReader(f)
	if err != nil {
		return ""
	}
	defer z.Close()
	head := make([]byte, 32+len("tree ")+len(sha)+1)
	n, _ := io.ReadFull(z, head) // a short object is judged by what it holds
	kind, body, ok := bytes.Cut(head[:n], []byte{0})
	if !ok || !bytes.HasPrefix(kind, []byte("commit ")) {
		return ""
	}
	line, _, ok := bytes.Cut(body, []byte("\n"))
	tree, isTree := bytes.CutPrefix(line, []byte("tree "))
	if !ok || !isTree || !IsOID(string(tree)) {
		return ""
	}
	return string(tree)
}

// openRegular opens path for reading if it is a regular file, as git
// writes its objects, refs and HEAD: a link in its place is not followed,
// and a pipe is not waited on.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.Join(fmt.Errorf("%s is not a regular file", path), err, f.Close())
	}
	return f, nil
}
