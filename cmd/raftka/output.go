package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// printTable writes rows under a header, in aligned columns.
func printTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		_, _ = fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// printJSON writes v as indented JSON, without HTML escapes: it is read
// by people and scripts, not embedded in pages.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// keyValues splits key=value arguments.
func keyValues(list []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("%q: want key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

// alterOps are --set key=value and --delete key as kadm's incremental
// config changes.
func alterOps(sets, deletes []string) ([]kadm.AlterConfig, error) {
	kv, err := keyValues(sets)
	if err != nil {
		return nil, err
	}
	var alter []kadm.AlterConfig
	for k, v := range kv {
		alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range deletes {
		alter = append(alter, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	return alter, nil
}

// joinNumbers lists broker ids or offsets, comma-separated.
func joinNumbers[T int32 | int64](ns []T) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}

// refusal is a broker's refusal as raftka prints it: the code's name, and
// the broker's message, else Kafka's description of the code, with what
// to do where raftka knows.
type refusal struct {
	code *kerr.Error
	msg  string
}

func (r refusal) Error() string { return r.code.Message + ": " + r.msg }
func (r refusal) Unwrap() error { return r.code }

// hints say what to do about a refusal.
var hints = map[*kerr.Error]string{
	kerr.SecurityDisabled: "the brokers run without an authorizer: start them with --authorizer acl " +
		"(on Kubernetes, set the BrokerCluster's spec.authorization)",
}

// refused is err, a broker's answer, with the message the broker gave.
func refused(err error, msg string) error {
	var code *kerr.Error
	if !errors.As(err, &code) {
		if msg == "" {
			return err
		}
		return fmt.Errorf("%w: %s", err, msg)
	}
	if msg == "" || msg == code.Message {
		msg = code.Description
		if hint, ok := hints[code]; ok {
			msg = hint
		}
	}
	return refusal{code, msg}
}

// report prints what a command did: v as JSON with -o json, else the
// sentence format makes of args.
func (e *env) report(v any, format string, args ...any) error {
	if e.json {
		return printJSON(e.out, v)
	}
	_, err := fmt.Fprintf(e.out, format+"\n", args...)
	return err
}

// printJSONLine writes v as one line of JSON.
func printJSONLine(e *env, v any) error {
	return json.NewEncoder(e.out).Encode(v)
}
