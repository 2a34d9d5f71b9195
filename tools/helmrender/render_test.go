package main

// Unit tests of the renderer's Helm semantics (the chart itself is tested by tests/deploy).

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestMergeValuesDeepAndNullDeletes(t *testing.T) {
	base := Values{"a": map[string]interface{}{"b": 1.0, "c": 2.0}, "d": "x", "l": []interface{}{1.0, 2.0}}
	over := Values{"a": map[string]interface{}{"c": 3.0}, "d": nil, "l": []interface{}{9.0}}
	got := mergeValues(base, over)
	want := Values{"a": map[string]interface{}{"b": 1.0, "c": 3.0}, "l": []interface{}{9.0}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merge: got %v want %v", got, want)
	}
}

func TestSetTyping(t *testing.T) {
	vals := Values{}
	for _, s := range []string{"a.b=3", "a.c=true", "a.d=0.5", "a.e=007", `a.f\.g=x\,y`, "l={1,two}", "m[1].n=z", "s=null"} {
		if err := applySet(vals, s, setTyped); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	want := Values{
		"a": map[string]interface{}{"b": int64(3), "c": true, "d": "0.5", "e": "007", "f.g": "x,y"},
		"l": []interface{}{int64(1), "two"},
		"m": []interface{}{nil, map[string]interface{}{"n": "z"}},
		"s": nil,
	}
	if !reflect.DeepEqual(vals, want) {
		t.Fatalf("set: got %#v\nwant %#v", vals, want)
	}
	if err := applySet(vals, "x=1,y=2", setString); err != nil || vals["x"] != "1" || vals["y"] != "2" {
		t.Fatalf("set-string: %v %#v", err, vals)
	}
	if err := applySet(vals, `j={"k":[1.5,"a,b"]}`, setJSON); err != nil {
		t.Fatal(err)
	}
	if got := vals["j"].(map[string]interface{})["k"].([]interface{}); got[0] != 1.5 || got[1] != "a,b" {
		t.Fatalf("set-json: %#v", got)
	}
	for _, bad := range []string{"novalue", "[0]=x", "a[x]=1"} {
		if err := applySet(Values{}, bad, setTyped); err == nil {
			t.Errorf("%q: expected an error", bad)
		}
	}
}

func TestRequiredAndToYaml(t *testing.T) {
	if _, err := required("need it", ""); err == nil || err.Error() != "need it" {
		t.Fatalf("required on empty string: %v", err)
	}
	if _, err := required("need it", nil); err == nil {
		t.Fatal("required on nil passed")
	}
	if _, err := required("need it", 0.0); err != nil {
		t.Fatal("required rejected a number")
	}
	if got := toYAML(map[string]interface{}{"b": 1, "a": []string{"x"}}); got != "a:\n- x\nb: 1" {
		t.Fatalf("toYaml: %q", got)
	}
}

// writeChart makes a throw-away chart for render tests.
func writeChart(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	files["Chart.yaml"] = "apiVersion: v2\nname: demo\nversion: 1.2.3\nappVersion: \"9.9\"\nkubeVersion: \">=1.24.0-0\"\n"
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRenderBuiltinsIncludeTplAndOrder(t *testing.T) {
	dir := writeChart(t, map[string]string{
		"values.yaml":             "name: web\ngreeting: \"hi {{ .Release.Name }}\"\nport: 8080\n",
		"templates/_helpers.tpl":  `{{- define "demo.full" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}`,
		"templates/svc.yaml":      "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ include \"demo.full\" . }}\n  annotations:\n    greeting: {{ tpl .Values.greeting . | quote }}\n    template: {{ .Template.Name }}\n    kube: \"{{ .Capabilities.KubeVersion.Major }}.{{ .Capabilities.KubeVersion.Minor }}\"\n    has-apps: {{ .Capabilities.APIVersions.Has \"apps/v1\" | quote }}\n    lookup: {{ lookup \"v1\" \"Secret\" \"ns\" \"x\" | len | quote }}\n    install: {{ .Release.IsInstall | quote }}\n    app: {{ .Chart.AppVersion | quote }}\n",
		"templates/cm.yaml":       "# leading comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\ndata:\n  port: {{ .Values.port | quote }}\n  missing: \"{{ .Values.nothere }}\"\n---\n# only a comment\n",
		"templates/hook.yaml":     "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n",
		"templates/NOTES.txt":     "Release {{ .Release.Name }} in {{ .Release.Namespace }}\n",
		"templates/ignored.txt":   "not a manifest",
		"templates/deploy.yaml":   "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n",
		"templates/sub/extra.yml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n",
	})
	var out, errb bytes.Buffer
	code := run([]string{dir, "--name", "rel", "--namespace", "ns", "--json", "--set", "name=api"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var res struct {
		Manifests []struct {
			Source string                 `json:"source"`
			Object map[string]interface{} `json:"object"`
		} `json:"manifests"`
		Notes string `json:"notes"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, m := range res.Manifests {
		kinds = append(kinds, m.Object["kind"].(string))
	}
	if got := strings.Join(kinds, ","); got != "Secret,ConfigMap,Service,Deployment,Pod" {
		t.Fatalf("order: %s", got)
	}
	svc := res.Manifests[2].Object["metadata"].(map[string]interface{})
	if svc["name"] != "rel-demo" {
		t.Errorf("include: %v", svc["name"])
	}
	ann := svc["annotations"].(map[string]interface{})
	want := map[string]interface{}{"greeting": "hi rel", "template": "demo/templates/svc.yaml", "kube": "1.29",
		"has-apps": "true", "lookup": "0", "install": "true", "app": "9.9"}
	if !reflect.DeepEqual(ann, want) {
		t.Errorf("built-ins: got %v want %v", ann, want)
	}
	cm := res.Manifests[1].Object
	if cm["metadata"].(map[string]interface{})["name"] != "api" || cm["data"].(map[string]interface{})["missing"] != "" {
		t.Errorf("configmap: %v", cm)
	}
	if res.Notes != "Release rel in ns\n" {
		t.Errorf("notes: %q", res.Notes)
	}
	if res.Manifests[4].Source != "demo/templates/hook.yaml" {
		t.Errorf("hook not last: %v", res.Manifests[4].Source)
	}

	out.Reset()
	if code := run([]string{dir}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "---\n# Source: demo/templates/sub/extra.yml\n") {
		t.Fatalf("yaml stream: exit %d: %q", code, out.String())
	}
	if strings.Contains(out.String(), "NOTES") || strings.Contains(out.String(), "not a manifest") {
		t.Fatalf("NOTES or a .txt file leaked into the manifests")
	}
}

func TestRenderErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		args  []string
		want  string
	}{
		{"required", map[string]string{"templates/a.yaml": `x: {{ required "a.b is required here" .Values.a }}`},
			nil, "execution error at (demo/templates/a.yaml:1:6): a.b is required here"},
		{"fail in include", map[string]string{
			"templates/_h.tpl": `{{ define "chk" }}{{ fail "bad config" }}{{ end }}`,
			"templates/a.yaml": `{{ include "chk" . }}`}, nil, "execution error at (demo/templates/_h.tpl:1:21): bad config"},
		{"schema", map[string]string{
			"values.yaml":        "replicas: 1\n",
			"values.schema.json": `{"type":"object","properties":{"replicas":{"type":"integer"}}}`,
			"templates/a.yaml":   "x: 1\n"}, []string{"--set", "replicas=one"},
			"- replicas: Invalid type. Expected: integer, given: string"},
		{"bad yaml", map[string]string{"templates/a.yaml": "a: [\n"}, nil, "YAML parse error on demo/templates/a.yaml"},
		{"kube version", map[string]string{"templates/a.yaml": "x: 1\n"}, []string{"--kube-version", "1.20.0"},
			"chart requires kubeVersion: >=1.24.0-0 which is incompatible with Kubernetes v1.20.0"},
		{"parse", map[string]string{"templates/a.yaml": "{{ if }}"}, nil, "parse error in demo/templates/a.yaml"},
		{"no env", map[string]string{"templates/a.yaml": `x: {{ env "HOME" }}`}, nil, `function "env" not defined`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeChart(t, c.files)
			var out, errb bytes.Buffer
			code := run(append([]string{dir}, c.args...), &out, &errb)
			if code != 1 || !strings.Contains(errb.String(), c.want) {
				t.Fatalf("exit %d, stderr %q, want it to contain %q", code, errb.String(), c.want)
			}
		})
	}
}

func TestValuesFilesOverride(t *testing.T) {
	dir := writeChart(t, map[string]string{
		"values.yaml":      "a:\n  b: 1\n  c: 2\n",
		"over.yaml":        "a:\n  c: 5\n",
		"templates/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: \"{{ .Values.a.b }}-{{ .Values.a.c }}\"\n",
	})
	var out, errb bytes.Buffer
	code := run([]string{"-f", filepath.Join(dir, "over.yaml"), dir, "--set", "a.b=7"}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), `v: "7-5"`) {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
}

func TestYAML2JSON(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte("x-common: &c\n  a: 1\nsvc:\n  <<: *c\n  b: [x]\n---\nsecond: true\n"), 0o644)
	var out, errb bytes.Buffer
	if code := run([]string{"--yaml2json", path}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var docs []map[string]interface{}
	if err := json.Unmarshal(out.Bytes(), &docs); err != nil || len(docs) != 2 {
		t.Fatalf("%v %s", err, out.String())
	}
	if svc := docs[0]["svc"].(map[string]interface{}); svc["a"] != 1.0 {
		t.Fatalf("merge key not applied: %v", svc)
	}
}
