package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/infinite-improbability-drive/spawn/internal/suggest"
	"github.com/infinite-improbability-drive/spawn/runners"
)

// keys is every dotted key a configuration file may set ("spawn.idle_timeout"),
// read from Config's toml tags (each CLI's [runners.<name>] table from
// runners.Settings'), with whether its value is a duration.
func keys() map[string]bool {
	out := map[string]bool{}
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if name == "" || name == "-" {
				continue
			}
			key := name
			if prefix != "" {
				key = prefix + "." + name
			}
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Duration(0)) {
				walk(f.Type, key)
				continue
			}
			out[key] = f.Type == reflect.TypeOf(time.Duration(0))
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	for _, a := range runners.NewRegistry().Adapters() {
		walk(reflect.TypeOf(runners.Settings{}), "runners."+a.Name())
	}
	return out
}

// legacyKeys are the keys kept working under their older names, which the
// template does not show: key -> the key that replaced it.
func legacyKeys() map[string]string {
	out := map[string]string{}
	t := reflect.TypeOf(Team{})
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if by := f.Tag.Get("legacy"); by != "" {
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			out["spawn-team."+name] = "spawn-team." + by
		}
	}
	return out
}

// wanted says what kind of value key holds and gives an example as TOML
// writes it: the built-in default when it has one. want is "" for a key
// Config does not have.
func wanted(key string) (want, example string) {
	v := reflect.ValueOf(Default())
	for _, name := range strings.Split(key, ".") {
		if v.Kind() != reflect.Struct {
			return "", ""
		}
		found := false
		for i := 0; !found && i < v.NumField(); i++ {
			tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("toml"), ",")
			if tag == name {
				v, found = v.Field(i), true
			}
		}
		if !found {
			return "", ""
		}
	}
	switch x := v.Interface().(type) {
	case time.Duration:
		if x == 0 {
			x = 5 * time.Minute
		}
		return "a duration in quotes", fmt.Sprintf("%q", FormatDuration(x))
	case int:
		return "a whole number", fmt.Sprint(max(x, 3))
	case float64:
		if x == 0 {
			x = 2.5
		}
		return "a number", fmt.Sprint(x)
	case bool:
		return "true or false", "true"
	case []string:
		if len(x) == 0 {
			x = []string{"..."}
		}
		q := make([]string, len(x))
		for i, s := range x {
			q[i] = fmt.Sprintf("%q", s)
		}
		return "a list of strings", "[" + strings.Join(q, ", ") + "]"
	}
	if v.Kind() == reflect.String {
		s := v.String()
		if s == "" {
			s = "..."
		}
		return "a string in quotes", fmt.Sprintf("%q", s)
	}
	return "", ""
}

// FormatDuration writes d as a person writes it in spawn-team.toml:
// "5m", "1h30m", "90s" ("1m30s"), "0s".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// unknownKey is the message for a key no table has: the nearest valid key
// when one is close, and the keys of its table.
func unknownKey(key string) string {
	all := keys()
	table := ""
	if i := strings.LastIndex(key, "."); i >= 0 {
		table = key[:i]
	}
	var siblings, names []string
	for k := range all {
		names = append(names, k)
		if i := strings.LastIndex(k, "."); i >= 0 && k[:i] == table {
			siblings = append(siblings, k[i+1:])
		}
	}
	sort.Strings(siblings)
	sort.Strings(names)
	best := suggest.Nearest(key, names, 4)
	msg := "unknown key"
	if best != "" {
		msg += fmt.Sprintf("; did you mean %s?", best)
	}
	if len(siblings) > 0 {
		msg += fmt.Sprintf(" The keys of [%s] are: %s", table, strings.Join(siblings, ", "))
	} else {
		var tables []string
		seen := map[string]bool{}
		for k := range all {
			if i := strings.LastIndex(k, "."); i >= 0 && !seen[k[:i]] {
				seen[k[:i]] = true
				tables = append(tables, "["+k[:i]+"]")
			}
		}
		sort.Strings(tables)
		msg += fmt.Sprintf("; the tables are: %s", strings.Join(tables, ", "))
	}
	return msg
}

// integerDurations finds a duration key the file set to a bare integer
// (which TOML would read as nanoseconds): an *Error naming the file, line
// and key, with the fix.
func integerDurations(path string, data []byte, md toml.MetaData) error {
	var bad []string
	for key, isDuration := range keys() {
		if isDuration && md.IsDefined(strings.Split(key, ".")...) && md.Type(strings.Split(key, ".")...) == "Integer" {
			bad = append(bad, key)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Slice(bad, func(i, j int) bool { return keyLine(data, bad[i]) < keyLine(data, bad[j]) })
	key := bad[0]
	line := keyLine(data, key)
	fix := `"300s"`
	if line > 0 {
		text := strings.Split(string(data), "\n")[line-1]
		if _, v, ok := strings.Cut(text, "="); ok {
			v, _, _ = strings.Cut(v, "#")
			fix = fmt.Sprintf("%q", strings.TrimSpace(v)+"s")
		}
	}
	return &Error{File: path, Line: line, Key: key,
		Msg: fmt.Sprintf("a bare number is not a duration (TOML would read it as nanoseconds); write it with a unit, in quotes, such as %s or \"5m\"", fix)}
}
