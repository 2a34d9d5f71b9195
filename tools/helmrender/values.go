package main

// Values: loading values.yaml and -f files, merging them the way Helm coalesces values, applying
// --set / --set-string / --set-json, and validating the result against values.schema.json.

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/xeipuuv/gojsonschema"
	"sigs.k8s.io/yaml"
)

// Values is a tree of map[string]interface{}, []interface{} and scalars, as Helm has it.
type Values = map[string]interface{}

// readValuesFile parses one YAML values file. An empty file gives an empty map.
func readValuesFile(path string) (Values, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseValues(data, path)
}

func parseValues(data []byte, name string) (Values, error) {
	vals := Values{}
	if err := yaml.Unmarshal(data, &vals); err != nil {
		return nil, fmt.Errorf("cannot parse %s: %v", name, err)
	}
	if vals == nil {
		vals = Values{}
	}
	return vals, nil
}

// mergeValues merges src into dst (src wins). A null in src deletes the key, as in Helm.
func mergeValues(dst, src Values) Values {
	if dst == nil {
		dst = Values{}
	}
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		srcMap, srcIsMap := v.(map[string]interface{})
		dstMap, dstIsMap := dst[k].(map[string]interface{})
		if srcIsMap && dstIsMap {
			dst[k] = mergeValues(dstMap, srcMap)
		} else {
			dst[k] = v
		}
	}
	return dst
}

// setKind says how the right-hand side of a --set style assignment is typed.
type setKind int

const (
	setTyped  setKind = iota // --set: true/false/null/integers are typed, the rest are strings
	setString                // --set-string: always a string
	setJSON                  // --set-json: the value is JSON
)

// applySet applies one --set argument ("a.b=c,d[0]=e") to vals.
func applySet(vals Values, arg string, kind setKind) error {
	var assignments []string
	if kind == setJSON {
		assignments = []string{arg} // JSON values contain commas: one assignment per flag
	} else {
		assignments = splitUnescaped(arg, ',', true)
	}
	for _, a := range assignments {
		eq := indexUnescaped(a, '=')
		if eq < 0 {
			return fmt.Errorf("--set %q: expected key=value", a)
		}
		path, err := parseKeyPath(a[:eq])
		if err != nil {
			return fmt.Errorf("--set %q: %v", a, err)
		}
		raw := a[eq+1:]
		var value interface{}
		switch kind {
		case setJSON:
			if err := json.Unmarshal([]byte(raw), &value); err != nil {
				return fmt.Errorf("--set-json %q: %v", a, err)
			}
		case setString:
			value = unescape(raw)
		default:
			value = typedValue(raw)
		}
		if err := setPath(vals, path, value); err != nil {
			return fmt.Errorf("--set %q: %v", a, err)
		}
	}
	return nil
}

// typedValue mirrors Helm's strvals: {a,b} is a list, true/false/null are typed, integers
// become int64 (a leading zero keeps a string), everything else (floats included) is a string.
func typedValue(raw string) interface{} {
	if strings.HasPrefix(raw, "{") && strings.HasSuffix(raw, "}") {
		inner := raw[1 : len(raw)-1]
		list := []interface{}{}
		if inner == "" {
			return list
		}
		for _, item := range splitUnescaped(inner, ',', false) {
			list = append(list, typedValue(item))
		}
		return list
	}
	switch strings.ToLower(raw) {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	if raw == "0" {
		return int64(0)
	}
	if raw != "" && raw[0] != '0' && raw[0] != '+' {
		if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
			return n
		}
	}
	return unescape(raw)
}

// keyPart is one step of a --set key: a map key, or a list index when index >= 0.
type keyPart struct {
	key   string
	index int
}

// parseKeyPath splits "a.b\.c[2].d" into a, b.c, [2], d.
func parseKeyPath(s string) ([]keyPart, error) {
	var parts []keyPart
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			parts = append(parts, keyPart{key: cur.String(), index: -1})
			cur.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == '.':
			flush()
		case c == '[':
			flush()
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("unterminated [ in key %q", s)
			}
			n, err := strconv.Atoi(s[i+1 : i+end])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad list index in key %q", s)
			}
			parts = append(parts, keyPart{index: n})
			i += end
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	if len(parts) == 0 || parts[0].index >= 0 {
		return nil, fmt.Errorf("key %q must start with a name", s)
	}
	return parts, nil
}

// setPath stores value at path, creating maps and growing lists as needed.
func setPath(vals Values, path []keyPart, value interface{}) error {
	var set func(container interface{}, i int) (interface{}, error)
	set = func(container interface{}, i int) (interface{}, error) {
		p := path[i]
		last := i == len(path)-1
		if p.index < 0 {
			m, ok := container.(map[string]interface{})
			if !ok || m == nil {
				m = map[string]interface{}{}
			}
			if last {
				m[p.key] = value
				return m, nil
			}
			child, err := set(m[p.key], i+1)
			if err != nil {
				return nil, err
			}
			m[p.key] = child
			return m, nil
		}
		l, _ := container.([]interface{})
		for len(l) <= p.index {
			l = append(l, nil)
		}
		if last {
			l[p.index] = value
			return l, nil
		}
		child, err := set(l[p.index], i+1)
		if err != nil {
			return nil, err
		}
		l[p.index] = child
		return l, nil
	}
	_, err := set(vals, 0)
	return err
}

// splitUnescaped splits on sep, honouring backslash escapes and (when braces) {...} groups.
func splitUnescaped(s string, sep byte, braces bool) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case braces && s[i] == '{':
			depth++
		case braces && s[i] == '}' && depth > 0:
			depth--
		case s[i] == sep && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func indexUnescaped(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
		} else if s[i] == c {
			return i
		}
	}
	return -1
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// validateValues checks vals against a JSON schema and returns one error listing every
// violation with the field it concerns, in Helm's wording.
func validateValues(chartName string, schema []byte, vals Values) error {
	// Round-trip through JSON so that int64 from --set and float64 from YAML look alike.
	doc, err := json.Marshal(vals)
	if err != nil {
		return err
	}
	result, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(schema), gojsonschema.NewBytesLoader(doc))
	if err != nil {
		return fmt.Errorf("values.schema.json: %v", err)
	}
	if result.Valid() {
		return nil
	}
	var lines []string
	for _, e := range result.Errors() {
		lines = append(lines, fmt.Sprintf("- %s: %s", e.Field(), e.Description()))
	}
	sort.Strings(lines)
	return fmt.Errorf("values don't meet the specifications of the schema(s) in the following chart(s):\n%s:\n%s",
		chartName, strings.Join(lines, "\n"))
}
