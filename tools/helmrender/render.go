package main

// Chart loading and rendering: Chart.yaml, templates/ (recursively), the built-in objects
// (.Values, .Release, .Chart, .Capabilities, .Template), Helm's manifest ordering.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/semver"
	"sigs.k8s.io/yaml"
)

// Chart is a chart directory read from disk.
type Chart struct {
	Dir       string
	Metadata  map[string]interface{} // Chart.yaml as parsed
	Values    Values                 // values.yaml
	Schema    []byte                 // values.schema.json, nil when absent
	Templates map[string]string      // "unmask/templates/x.yaml" -> text
}

// Options are the inputs of one render besides the chart: release and cluster facts.
type Options struct {
	ReleaseName string
	Namespace   string
	KubeVersion string
	APIVersions []string
	IsUpgrade   bool
}

// Manifest is one rendered Kubernetes object.
type Manifest struct {
	Source  string                 // "unmask/templates/x.yaml"
	Content string                 // YAML text of the document
	Object  map[string]interface{} // the document parsed
}

// Result is what a render produces.
type Result struct {
	Manifests []Manifest // ordinary manifests in install order, then hooks
	Notes     string     // rendered NOTES.txt
}

func (c *Chart) Name() string {
	s, _ := c.Metadata["name"].(string)
	return s
}

// loadChart reads Chart.yaml, values.yaml, values.schema.json and templates/ from dir.
func loadChart(dir string) (*Chart, error) {
	c := &Chart{Dir: dir, Templates: map[string]string{}}
	data, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, fmt.Errorf("not a chart directory: %v", err)
	}
	if err := yaml.Unmarshal(data, &c.Metadata); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %v", err)
	}
	if c.Metadata["apiVersion"] != "v2" {
		return nil, fmt.Errorf("Chart.yaml: apiVersion must be v2")
	}
	if c.Name() == "" {
		return nil, fmt.Errorf("Chart.yaml: name is required")
	}
	version, _ := c.Metadata["version"].(string)
	if _, err := semver.StrictNewVersion(version); err != nil {
		return nil, fmt.Errorf("Chart.yaml: version %q is not a semantic version", version)
	}
	c.Values = Values{}
	if _, err := os.Stat(filepath.Join(dir, "values.yaml")); err == nil {
		if c.Values, err = readValuesFile(filepath.Join(dir, "values.yaml")); err != nil {
			return nil, err
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "values.schema.json")); err == nil {
		c.Schema = data
	}
	tdir := filepath.Join(dir, "templates")
	err = filepath.Walk(tdir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(tdir, path)
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		c.Templates[c.Name()+"/templates/"+filepath.ToSlash(rel)] = string(text)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("templates: %v", err)
	}
	return c, nil
}

// chartObject is .Chart: Chart.yaml with Helm's field names (name -> Name, apiVersion -> APIVersion).
func chartObject(meta map[string]interface{}) map[string]interface{} {
	special := map[string]string{"apiVersion": "APIVersion", "appVersion": "AppVersion", "kubeVersion": "KubeVersion"}
	out := map[string]interface{}{}
	for k, v := range meta {
		name, ok := special[k]
		if !ok {
			name = strings.ToUpper(k[:1]) + k[1:]
		}
		out[name] = v
	}
	return out
}

// VersionSet is .Capabilities.APIVersions.
type VersionSet []string

// Has says whether an API version ("apps/v1") or a resource ("apps/v1/Deployment") is known.
func (v VersionSet) Has(name string) bool {
	for _, x := range v {
		if x == name {
			return true
		}
	}
	return false
}

// KubeVersion is .Capabilities.KubeVersion.
type KubeVersion struct {
	Version, Major, Minor, GitVersion string
}

func (k KubeVersion) String() string { return k.Version }

// Capabilities is .Capabilities: what `helm template` knows without a cluster.
type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions VersionSet
	HelmVersion map[string]interface{}
}

// defaultAPIVersions is the built-in API list of `helm template` for the APIs this project uses.
var defaultAPIVersions = []string{
	"v1", "apps/v1", "batch/v1", "policy/v1", "autoscaling/v2", "networking.k8s.io/v1",
	"rbac.authorization.k8s.io/v1", "storage.k8s.io/v1",
}

func capabilities(opts Options) (*Capabilities, error) {
	v, err := semver.NewVersion(opts.KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("--kube-version %q: %v", opts.KubeVersion, err)
	}
	apis := append(VersionSet{}, defaultAPIVersions...)
	apis = append(apis, opts.APIVersions...)
	return &Capabilities{
		KubeVersion: KubeVersion{
			Version:    "v" + v.String(),
			Major:      fmt.Sprint(v.Major()),
			Minor:      fmt.Sprint(v.Minor()),
			GitVersion: "v" + v.String(),
		},
		APIVersions: apis,
		HelmVersion: map[string]interface{}{"Version": "v3.14.0", "GoVersion": "helmrender"},
	}, nil
}

// render renders every template of c with vals (already merged and validated).
func render(c *Chart, vals Values, opts Options) (*Result, error) {
	caps, err := capabilities(opts)
	if err != nil {
		return nil, err
	}
	if kv, ok := c.Metadata["kubeVersion"].(string); ok && kv != "" {
		constraint, err := semver.NewConstraint(kv)
		if err != nil {
			return nil, fmt.Errorf("Chart.yaml: kubeVersion %q: %v", kv, err)
		}
		v, _ := semver.NewVersion(caps.KubeVersion.Version)
		if !constraint.Check(v) {
			return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", kv, caps.KubeVersion.Version)
		}
	}

	var root *template.Template
	root = template.New("gotpl").Option("missingkey=zero").Funcs(funcMap(&root))
	names := make([]string, 0, len(c.Templates))
	for name := range c.Templates {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := root.New(name).Parse(c.Templates[name]); err != nil {
			return nil, fmt.Errorf("parse error in %v", strings.TrimPrefix(err.Error(), "template: "))
		}
	}

	release := map[string]interface{}{
		"Name": opts.ReleaseName, "Namespace": opts.Namespace, "Service": "Helm",
		"IsInstall": !opts.IsUpgrade, "IsUpgrade": opts.IsUpgrade, "Revision": 1,
	}
	res := &Result{}
	var hooks []Manifest
	for _, name := range names {
		base := filepath.Base(name)
		if strings.HasPrefix(base, "_") {
			continue // partials: only defines
		}
		isNotes := base == "NOTES.txt"
		if !isNotes && !strings.HasSuffix(base, ".yaml") && !strings.HasSuffix(base, ".yml") {
			continue // Helm renders only manifests and NOTES.txt
		}
		data := map[string]interface{}{
			"Values":       vals,
			"Release":      release,
			"Chart":        chartObject(c.Metadata),
			"Capabilities": caps,
			"Template":     map[string]interface{}{"Name": name, "BasePath": c.Name() + "/templates"},
			"Files":        map[string]interface{}{},
		}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, data); err != nil {
			return nil, cleanExecError(err)
		}
		out := strings.ReplaceAll(buf.String(), "<no value>", "")
		if isNotes {
			res.Notes = out
			continue
		}
		docs, err := splitManifests(name, out)
		if err != nil {
			return nil, err
		}
		for _, m := range docs {
			if isHook(m) {
				hooks = append(hooks, m)
			} else {
				res.Manifests = append(res.Manifests, m)
			}
		}
	}
	sortByInstallOrder(res.Manifests)
	sortByInstallOrder(hooks)
	res.Manifests = append(res.Manifests, hooks...)
	return res, nil
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)

// splitManifests cuts a rendered file into YAML documents, drops empty ones and parses each.
func splitManifests(source, text string) ([]Manifest, error) {
	var out []Manifest
	for _, doc := range docSeparator.Split(text, -1) {
		if !hasContent(doc) {
			continue
		}
		doc = strings.Trim(doc, "\n")
		obj := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, fmt.Errorf("YAML parse error on %s: %v", source, err)
		}
		out = append(out, Manifest{Source: source, Content: doc, Object: obj})
	}
	return out, nil
}

// hasContent says whether a document has anything besides blank lines and comments.
func hasContent(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}

func isHook(m Manifest) bool {
	meta, _ := m.Object["metadata"].(map[string]interface{})
	ann, _ := meta["annotations"].(map[string]interface{})
	_, ok := ann["helm.sh/hook"]
	return ok
}

// installOrder is Helm's kind order for installs (releaseutil.InstallOrder).
var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList",
	"RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController",
	"ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob",
	"IngressClass", "Ingress", "APIService",
}

func sortByInstallOrder(ms []Manifest) {
	rank := func(m Manifest) int {
		kind, _ := m.Object["kind"].(string)
		for i, k := range installOrder {
			if k == kind {
				return i
			}
		}
		return len(installOrder) // unknown kinds (custom resources) last
	}
	sort.SliceStable(ms, func(i, j int) bool {
		ri, rj := rank(ms[i]), rank(ms[j])
		if ri != rj {
			return ri < rj
		}
		return ms[i].Source < ms[j].Source
	})
}

var execErrorRe = regexp.MustCompile(`(?s)^template: (.*?): executing ".*?" at <.*?>: error calling \w+: (.*)$`)

// cleanExecError turns text/template's error into Helm's "execution error at (file:line:col): msg".
func cleanExecError(err error) error {
	msg := err.Error()
	// include nests errors: report the innermost location and message, as Helm does.
	if m := execErrorRe.FindStringSubmatch(msg); m != nil {
		for {
			n := execErrorRe.FindStringSubmatch(m[2])
			if n == nil {
				break
			}
			m = n
		}
		return fmt.Errorf("execution error at (%s): %s", m[1], m[2])
	}
	return fmt.Errorf("template: %s", strings.TrimPrefix(msg, "template: "))
}
