// helmrender renders a Helm chart the way `helm template` does, without the helm binary:
// text/template + sprig + Helm's built-ins, values.yaml with -f/--set overrides, checked
// against values.schema.json. It covers what the unmask chart uses, not all of Helm.
//
//	helmrender [flags] CHART_DIR
//	helmrender --yaml2json FILE      (a YAML stream as a JSON array, for tests without PyYAML)
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type config struct {
	chartDir     string
	valueFiles   multiFlag
	sets         multiFlag
	setStrings   multiFlag
	setJSONs     multiFlag
	apiVersions  multiFlag
	opts         Options
	jsonOut      bool
	notesOnly    bool
	notesOut     string
	validateOnly bool
	yaml2json    string
}

func parseArgs(args []string, stderr io.Writer) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("helmrender", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&cfg.valueFiles, "f", "values file to merge over the chart's values.yaml (repeatable)")
	fs.Var(&cfg.valueFiles, "values", "same as -f")
	fs.Var(&cfg.sets, "set", "set a value: a.b=c, a.list[0]=x, a.list={x,y} (repeatable)")
	fs.Var(&cfg.setStrings, "set-string", "set a value, always as a string (repeatable)")
	fs.Var(&cfg.setJSONs, "set-json", "set a value from JSON: a.b=1.5 (repeatable)")
	fs.Var(&cfg.apiVersions, "api-versions", "add an API version to .Capabilities.APIVersions (repeatable)")
	fs.StringVar(&cfg.opts.ReleaseName, "name", "unmask", "release name (.Release.Name)")
	fs.StringVar(&cfg.opts.Namespace, "namespace", "default", "release namespace (.Release.Namespace)")
	fs.StringVar(&cfg.opts.KubeVersion, "kube-version", "v1.29.0", "Kubernetes version for .Capabilities.KubeVersion")
	fs.BoolVar(&cfg.opts.IsUpgrade, "is-upgrade", false, "render as an upgrade (.Release.IsUpgrade)")
	fs.BoolVar(&cfg.jsonOut, "json", false, "print {\"manifests\": [{source, object}], \"notes\"} as JSON instead of YAML")
	fs.BoolVar(&cfg.notesOnly, "notes", false, "print only the rendered NOTES.txt")
	fs.StringVar(&cfg.notesOut, "notes-out", "", "also write the rendered NOTES.txt to this file")
	fs.BoolVar(&cfg.validateOnly, "validate-only", false, "only merge and validate the values against values.schema.json")
	fs.StringVar(&cfg.yaml2json, "yaml2json", "", "convert a YAML file (several documents allowed) to a JSON array and exit")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: helmrender [flags] CHART_DIR\n       helmrender --yaml2json FILE")
		fs.PrintDefaults()
	}
	// Allow flags after the chart directory, as helm does.
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) > 0 {
			if cfg.chartDir != "" {
				return nil, fmt.Errorf("more than one chart directory: %s and %s", cfg.chartDir, args[0])
			}
			cfg.chartDir = args[0]
			args = args[1:]
		}
	}
	if cfg.yaml2json == "" && cfg.chartDir == "" {
		fs.Usage()
		return nil, fmt.Errorf("no chart directory given")
	}
	return cfg, nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without os.Exit, for tests: 0 success, 1 render or validation error, 2 usage.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseArgs(args, stderr)
	if err == flag.ErrHelp {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 2
	}
	if cfg.yaml2json != "" {
		err = yamlFileToJSON(cfg.yaml2json, stdout)
	} else {
		err = renderChart(cfg, stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
	return 0
}

// loadValues merges values.yaml, the -f files in order, then the --set family, and validates.
func loadValues(c *Chart, cfg *config) (Values, error) {
	vals := mergeValues(Values{}, c.Values)
	for _, f := range cfg.valueFiles {
		user, err := readValuesFile(f)
		if err != nil {
			return nil, err
		}
		vals = mergeValues(vals, user)
	}
	sets := Values{}
	for _, s := range cfg.sets {
		if err := applySet(sets, s, setTyped); err != nil {
			return nil, err
		}
	}
	for _, s := range cfg.setStrings {
		if err := applySet(sets, s, setString); err != nil {
			return nil, err
		}
	}
	for _, s := range cfg.setJSONs {
		if err := applySet(sets, s, setJSON); err != nil {
			return nil, err
		}
	}
	vals = mergeValues(vals, sets)
	if c.Schema != nil {
		if err := validateValues(c.Name(), c.Schema, vals); err != nil {
			return nil, err
		}
	}
	return vals, nil
}

func renderChart(cfg *config, stdout io.Writer) error {
	c, err := loadChart(cfg.chartDir)
	if err != nil {
		return err
	}
	vals, err := loadValues(c, cfg)
	if err != nil {
		return err
	}
	if cfg.validateOnly {
		return nil
	}
	cfg.opts.APIVersions = cfg.apiVersions
	res, err := render(c, vals, cfg.opts)
	if err != nil {
		return err
	}
	if cfg.notesOut != "" {
		if err := os.WriteFile(cfg.notesOut, []byte(res.Notes), 0o644); err != nil {
			return err
		}
	}
	switch {
	case cfg.notesOnly:
		_, err = io.WriteString(stdout, res.Notes)
	case cfg.jsonOut:
		type doc struct {
			Source string                 `json:"source"`
			Object map[string]interface{} `json:"object"`
		}
		out := struct {
			Manifests []doc  `json:"manifests"`
			Notes     string `json:"notes"`
		}{Manifests: []doc{}, Notes: res.Notes}
		for _, m := range res.Manifests {
			out.Manifests = append(out.Manifests, doc{m.Source, m.Object})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(out)
	default:
		for _, m := range res.Manifests {
			if _, err = fmt.Fprintf(stdout, "---\n# Source: %s\n%s\n", m.Source, m.Content); err != nil {
				return err
			}
		}
	}
	return err
}

// yamlFileToJSON prints the documents of a YAML file as one JSON array.
func yamlFileToJSON(path string, stdout io.Writer) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	docs := []interface{}{}
	for _, d := range docSeparator.Split(string(data), -1) {
		if !hasContent(d) {
			continue
		}
		var v interface{}
		if err := yaml.Unmarshal([]byte(d), &v); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		docs = append(docs, v)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(docs)
}
