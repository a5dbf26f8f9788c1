package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/raftka/raftka/internal/clientsecurity"
)

// Profiles, as rpk's: named clusters with their brokers and credentials in
// a file, so that a command against a secured cluster is not a screenful
// of flags. What a command uses comes, in this order, from its flags, the
// RAFTKA_* environment, the profile (--profile, $RAFTKA_PROFILE, else the
// file's current one), and the defaults.

// profile is one named cluster.
type profile struct {
	Brokers          []string `json:"brokers"`
	SecurityProtocol string   `json:"securityProtocol,omitempty"`
	SASLMechanism    string   `json:"saslMechanism,omitempty"`
	Username         string   `json:"username,omitempty"`
	// Password is kept only when asked (--store-password), in a file only
	// its owner may read; PasswordEnv names the variable to read it from.
	Password    string `json:"password,omitempty"`
	PasswordEnv string `json:"passwordEnv,omitempty"`
	CAFile      string `json:"caFile,omitempty"`
	CertFile    string `json:"certFile,omitempty"`
	KeyFile     string `json:"keyFile,omitempty"`
}

// profiles is the file.
type profiles struct {
	Current  string             `json:"current,omitempty"`
	Profiles map[string]profile `json:"profiles"`
}

// profilesPath is $RAFTKA_CONFIG, else raftka/profiles.yaml in the user's
// configuration directory (~/.config on Linux).
func profilesPath() (string, error) {
	if p := os.Getenv("RAFTKA_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("where to keep profiles: %w (set RAFTKA_CONFIG)", err)
	}
	return filepath.Join(dir, "raftka", "profiles.yaml"), nil
}

// loadProfiles reads the file; none is an empty set of profiles.
func loadProfiles() (profiles, string, error) {
	path, err := profilesPath()
	if err != nil {
		return profiles{}, "", err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return profiles{Profiles: map[string]profile{}}, path, nil
	}
	if err != nil {
		return profiles{}, path, err
	}
	var ps profiles
	if err := yaml.UnmarshalStrict(data, &ps); err != nil {
		return profiles{}, path, fmt.Errorf("%s: %w", path, err)
	}
	if ps.Profiles == nil {
		ps.Profiles = map[string]profile{}
	}
	return ps, path, nil
}

// save writes the file readable by its owner only: it may hold a
// password.
func (ps profiles) save(path string) error {
	data, err := yaml.Marshal(ps)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// activeProfile is the profile a command runs with: the one named by
// --profile or $RAFTKA_PROFILE, else the current one; nil for none.
func activeProfile(named string) (*profile, error) {
	if named == "" {
		named = os.Getenv("RAFTKA_PROFILE")
	}
	ps, path, err := loadProfiles()
	if err != nil {
		return nil, err
	}
	if named == "" {
		named = ps.Current
	}
	if named == "" {
		return nil, nil
	}
	p, ok := ps.Profiles[named]
	if !ok {
		return nil, usagef("no profile %q in %s (raftka profile list)", named, path)
	}
	return &p, nil
}

// settings are the profile's as the global flags hold them.
func (p *profile) settings() (brokers string, sec clientsecurity.Settings) {
	sec = clientsecurity.Settings{Protocol: p.SecurityProtocol, Mechanism: p.SASLMechanism, Username: p.Username,
		Password: p.Password, CAFile: p.CAFile, CertFile: p.CertFile, KeyFile: p.KeyFile}
	if p.PasswordEnv != "" {
		sec.Password = os.Getenv(p.PasswordEnv)
	}
	return strings.Join(p.Brokers, ","), sec
}

// profileCreate records the brokers and security settings this command
// runs with (its global flags, the environment) as a profile.
func profileCreate(fs *pflag.FlagSet) runFunc {
	storePassword := fs.Bool("store-password", false, "keep the password in the file (readable by you only); without it, give --password-env")
	passwordEnv := fs.String("password-env", "", "the environment variable a command reads the password from")
	use := fs.Bool("use", true, "make it the current profile")
	return func(_ context.Context, e *env, args []string) error {
		ps, path, err := loadProfiles()
		if err != nil {
			return err
		}
		p := profile{Brokers: e.brokers, SecurityProtocol: e.security.Protocol, SASLMechanism: e.security.Mechanism,
			Username: e.security.Username, PasswordEnv: *passwordEnv, CAFile: absPath(e.security.CAFile),
			CertFile: absPath(e.security.CertFile), KeyFile: absPath(e.security.KeyFile)}
		if *storePassword {
			p.Password = e.security.Password
		}
		ps.Profiles[args[0]] = p
		if *use {
			ps.Current = args[0]
		}
		if err := ps.save(path); err != nil {
			return err
		}
		return e.report(map[string]any{"profile": args[0], "file": path}, "saved profile %s in %s", args[0], path)
	}
}

// absPath keeps a file's path valid from any directory.
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func profileList(_ context.Context, e *env, _ []string) error {
	ps, _, err := loadProfiles()
	if err != nil {
		return err
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range ps.Profiles {
			if !yield(n) {
				return
			}
		}
	})
	if e.json {
		return printJSON(e.out, map[string]any{"current": ps.Current, "profiles": names})
	}
	var cells [][]string
	for _, n := range names {
		current := ""
		if n == ps.Current {
			current = "*"
		}
		cells = append(cells, []string{current, n, strings.Join(ps.Profiles[n].Brokers, ","), ps.Profiles[n].SecurityProtocol})
	}
	return printTable(e.out, []string{"", "PROFILE", "BROKERS", "SECURITY"}, cells)
}

// profileChange makes a profile the current one, or deletes it.
func profileChange(del bool) runFunc {
	return func(_ context.Context, e *env, args []string) error {
		ps, path, err := loadProfiles()
		if err != nil {
			return err
		}
		name := args[0]
		if _, ok := ps.Profiles[name]; !ok {
			return fmt.Errorf("no profile %q in %s", name, path)
		}
		verb := "now using profile %s"
		if del {
			delete(ps.Profiles, name)
			verb = "deleted profile %s"
			if ps.Current == name {
				ps.Current = ""
			}
		} else {
			ps.Current = name
		}
		if err := ps.save(path); err != nil {
			return err
		}
		return e.report(map[string]any{"profile": name, "deleted": del}, verb, name)
	}
}
