package app

// Configuration of the commands. Every flag of a command can also be given in the
// environment and in a config file; a flag on the command line beats the environment, which
// beats the config file, which beats the flag's default:
//
//	flag --data-dir    env YT_FLOW_DATA_DIR    file key data_dir
//
// The file (--config FILE, or $YT_FLOW_CONFIG_FILE) is YAML (.yaml, .yml) or YSON (.yson), a
// map whose top-level keys apply to every command that has the flag and whose sections named
// after a command (run, worker, status …) apply to that command only, over the top level.
// Unknown keys are errors. The YTsaurus conventions work as well: $YT_PROXY for the proxy
// (after $YT_FLOW_PROXY), $YT_TOKEN for the token and $YT_TOKEN_PATH for a file holding it.
// The token has no flag (a command line is visible to every user of the host): it comes from
// $YT_FLOW_TOKEN, $YT_TOKEN, the file key token, or the file named by token_path.
// ($YT_FLOW_CONFIG is not the config file: in YTsaurus Flow it is a YSON patch of the node
// config.)

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/viper"

	"github.com/ytflow/yt-flow/yson"
)

// origin is where a setting's value came from, in increasing precedence.
type origin int

const (
	fromDefault origin = iota
	fromFile
	fromEnv
	fromFlag
)

// setting is the effective value of one configuration key.
type setting struct {
	value string
	from  origin
	// where names the origin: "default", "--data-dir", "$YT_PROXY" or the config file.
	where string
}

// settings are a command's effective configuration, by key (a flag's name with '_' for '-').
type settings struct {
	// file is the config file read, "" for none.
	file  string
	byKey map[string]setting
}

const configFileEnv = "YT_FLOW_CONFIG_FILE"

// configKey is the key of a flag in config files: the flag's name with '_' for '-'.
func configKey(flagName string) string { return strings.ReplaceAll(flagName, "-", "_") }

// envNames are the environment variables of a key, the first set one wins.
func envNames(key string) []string {
	own := "YT_FLOW_" + strings.ToUpper(key)
	switch key {
	case "config":
		return []string{configFileEnv}
	case "proxy":
		return []string{own, "YT_PROXY"}
	case "token":
		return []string{own, "YT_TOKEN", "YT_SECURE_VAULT_YT_TOKEN"}
	case "token_path":
		return []string{own, "YT_TOKEN_PATH"}
	}
	return []string{own}
}

// isSecret reports whether a key's value must never be shown: a token, password or secret
// (a file naming one, key ending in _path, is not a secret itself).
func isSecret(key string) bool {
	if strings.HasSuffix(key, "_path") {
		return false
	}
	for _, w := range []string{"token", "password", "secret"} {
		if strings.Contains(key, w) {
			return true
		}
	}
	return false
}

// addConfigFlag adds the --config flag every command with flags has.
func addConfigFlag(fs *flag.FlagSet) {
	fs.String("config", "", "config file (YAML or YSON) with values for the flags (default $"+configFileEnv+")")
}

// keysOfFlags returns the configuration keys of fs: one per flag, and "token" when the
// command takes a token (it has --token-path).
func keysOfFlags(fs *flag.FlagSet) map[string]*flag.Flag {
	keys := map[string]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) { keys[configKey(f.Name)] = f })
	if keys["token_path"] != nil {
		keys["token"] = nil
	}
	return keys
}

// knownKeys returns, per command with flags, its configuration keys.
func knownKeys() map[string]map[string]*flag.Flag {
	out := map[string]map[string]*flag.Flag{}
	quiet := &environ{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	for name, c := range commands {
		if c.setup == nil {
			continue
		}
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		c.setup(fs, quiet)
		out[name] = keysOfFlags(fs)
	}
	return out
}

// configure gives every flag of fs, parsed from the command line of command name, its
// effective value: the command line, else the environment, else the config file, else the
// default. An error is the user's to fix (exit code 2), one problem a line; none shows a
// secret.
func configure(name string, fs *flag.FlagSet, env *environ) (*settings, error) {
	keys := keysOfFlags(fs)
	s := &settings{byKey: map[string]setting{}}
	v := viper.New()
	for k, f := range keys {
		def := ""
		if f != nil {
			def = f.DefValue
		}
		v.SetDefault(k, def)
		s.byKey[k] = setting{from: fromDefault, where: "default"}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	if set["config"] {
		s.file = fs.Lookup("config").Value.String()
	} else {
		s.file = env.getenv(configFileEnv) // the loop over the environment below records it
	}
	if s.file != "" {
		tree, err := readConfigFile(s.file)
		if err != nil {
			return nil, fmt.Errorf("config file %s: %v", s.file, err)
		}
		values, problems := selectConfig(name, tree, keys, knownKeys())
		if len(problems) > 0 {
			for i, p := range problems {
				problems[i] = "config file " + s.file + ": " + p
			}
			return nil, errors.New(strings.Join(problems, "\n"))
		}
		if err := v.MergeConfigMap(values); err != nil {
			return nil, fmt.Errorf("config file %s: %v", s.file, err)
		}
		for k := range values {
			s.byKey[k] = setting{from: fromFile, where: s.file}
		}
	}

	fromEnvironment := map[string]any{}
	for k := range keys {
		for _, n := range envNames(k) {
			if val := env.getenv(n); val != "" {
				fromEnvironment[k] = val
				s.byKey[k] = setting{from: fromEnv, where: "$" + n}
				break
			}
		}
	}
	if err := v.MergeConfigMap(fromEnvironment); err != nil {
		return nil, fmt.Errorf("environment: %v", err)
	}
	fs.Visit(func(f *flag.Flag) {
		k := configKey(f.Name)
		v.Set(k, f.Value.String())
		s.byKey[k] = setting{from: fromFlag, where: "--" + f.Name}
	})

	var problems []string
	for _, k := range sortedKeysOf(keys) {
		st := s.byKey[k]
		st.value = v.GetString(k)
		s.byKey[k] = st
		f := keys[k]
		if f == nil || st.from == fromFlag || st.from == fromDefault {
			continue
		}
		if err := f.Value.Set(st.value); err != nil {
			shown := fmt.Sprintf("%q", st.value)
			if isSecret(k) {
				shown = "(masked)"
			}
			problems = append(problems, fmt.Sprintf("%s: invalid value %s for --%s: %v", st.where, shown, f.Name, err))
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	return s, nil
}

// readConfigFile decodes a YAML or YSON config file (by its extension) into a map.
func readConfigFile(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		v := viper.New()
		v.SetConfigType("yaml")
		if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
			return nil, err
		}
		return v.AllSettings(), nil
	case ".yson":
		root, err := yson.Decode(data)
		if err != nil {
			return nil, err
		}
		m, ok := root.Any().(map[string]any)
		if !ok {
			return nil, fmt.Errorf("want a map, got %s", root.Kind)
		}
		return m, nil
	}
	return nil, fmt.Errorf("unknown format %q: want .yaml, .yml or .yson", filepath.Ext(path))
}

// selectConfig checks every key of a config file against the keys of all commands (known)
// and returns the values for command name (whose keys are keys): the top level, overridden by
// the section named after the command. Problems name their key as a YSON path.
func selectConfig(name string, tree map[string]any, keys map[string]*flag.Flag, known map[string]map[string]*flag.Flag) (map[string]any, []string) {
	var problems []string
	anyCommand := map[string]bool{}
	for _, ks := range known {
		for k := range ks {
			anyCommand[k] = true
		}
	}
	delete(anyCommand, "config") // the file does not name another file
	top, own := map[string]any{}, map[string]any{}
	seen := map[string]string{} // normalised path -> path as written
	take := func(path, written, key string, val any, into map[string]any) {
		if other, dup := seen[path]; dup {
			problems = append(problems, fmt.Sprintf("%s: given twice (as %s and %s)", path, other, written))
			return
		}
		seen[path] = written
		switch val.(type) {
		case map[string]any, []any:
			problems = append(problems, fmt.Sprintf("%s: want a scalar, got %T", path, val))
			return
		case nil:
			return
		}
		if _, ok := keys[key]; ok {
			into[key] = fmt.Sprint(val)
		}
	}
	for _, raw := range sortedKeysOf(tree) {
		k := configKey(raw)
		if section, ok := known[k]; ok {
			m, ok := tree[raw].(map[string]any)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: want a map of %s's settings, got %T", raw, k, tree[raw]))
				continue
			}
			for _, rawSub := range sortedKeysOf(m) {
				sub := configKey(rawSub)
				path := k + "/" + sub
				if _, ok := section[sub]; !ok || sub == "config" {
					problems = append(problems, fmt.Sprintf("%s: unknown key (not a setting of %s)", yson.Join(k, rawSub), k))
					continue
				}
				into := own
				if k != name {
					into = map[string]any{} // checked, not used
				}
				take(path, yson.Join(raw, rawSub), sub, m[rawSub], into)
			}
			continue
		}
		if !anyCommand[k] {
			problems = append(problems, fmt.Sprintf("%s: unknown key", raw))
			continue
		}
		take(k, raw, k, tree[raw], top)
	}
	for k, v := range own {
		top[k] = v
	}
	return top, problems
}

// token is the token of the command: from token (environment or config file) or read from
// the file token_path names, whichever has the higher precedence (token on a tie).
func (s *settings) token() (string, error) {
	t, p := s.byKey["token"], s.byKey["token_path"]
	if p.value == "" || (t.value != "" && t.from >= p.from) {
		return t.value, nil
	}
	data, err := os.ReadFile(p.value)
	if err != nil {
		return "", fmt.Errorf("token_path (from %s): %w", p.where, err)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("token_path (from %s): %s is empty", p.where, p.value)
	}
	return tok, nil
}

// write prints the settings as a table, secrets masked.
func (s *settings) write(w io.Writer) {
	keys := sortedKeysOf(s.byKey)
	width := 0
	for _, k := range keys {
		width = max(width, len(k))
	}
	var vals []string
	vwidth := 0
	for _, k := range keys {
		v := s.byKey[k].value
		switch {
		case isSecret(k) && v != "":
			v = "********"
		case v == "":
			v = `""`
		}
		vals = append(vals, v)
		vwidth = max(vwidth, len(v))
	}
	for i, k := range keys {
		fmt.Fprintf(w, "%-*s  %-*s  (%s)\n", width, k, vwidth, vals[i], s.byKey[k].where)
	}
}

func init() {
	register(&command{
		name:     "config",
		examples: []string{"yt-flow config run --config yt-flow.yaml"},
		summary:  "print the effective settings of a command, or of all (flags > environment > config file > defaults), secrets masked",
		run:      runConfig,
	})
}

// allFlags is what `yt-flow config` shows without a command: the flags of every command,
// each once (a name two commands use differently, such as --log, as the first command in
// alphabetical order defines it).
func allFlags(fs *flag.FlagSet, env *environ) runFunc {
	for _, name := range sortedKeysOf(commands) {
		c := commands[name]
		if c.setup == nil {
			continue
		}
		own := flag.NewFlagSet(name, flag.ContinueOnError)
		c.setup(own, env)
		own.VisitAll(func(f *flag.Flag) {
			if fs.Lookup(f.Name) == nil {
				fs.Var(f.Value, f.Name, f.Usage)
			}
		})
	}
	return nil
}

func runConfig(_ context.Context, env *environ, args []string) int {
	name, setup := "", setupFunc(allFlags)
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		c, ok := commands[args[0]]
		if !ok || c.setup == nil {
			fmt.Fprintf(env.stderr, "yt-flow config: %q is not a command with settings\n", args[0])
			return 2
		}
		name, setup, args = args[0], c.setup, args[1:]
	}
	fs := newFlagSet(strings.TrimSpace("config "+name), env)
	setup(fs, env)
	s, code := parseSettings(name, fs, env, args)
	if code >= 0 {
		return code
	}
	if name == "" && fs.NArg() > 0 {
		fmt.Fprintf(env.stderr, "yt-flow config: unexpected arguments %q (the command goes first: yt-flow config COMMAND [flags])\n", fs.Args())
		return 2
	}
	what := "yt-flow " + name
	if name == "" {
		what = "every command"
	}
	fmt.Fprintf(env.stdout, "# settings of %s: flag > environment > config file > default\n", what)
	s.write(env.stdout)
	return 0
}
