// Package benchreport writes benchmark results into docs/benchmarks.md,
// one section per benchmark suite, replacing that section on each run and
// leaving the others alone.
package benchreport

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

const header = "# Benchmarks\n\nWritten by `make bench`. Each section is replaced when its suite runs again.\nAbsolute numbers depend on the machine; compare runs made side by side on one machine.\n"

// Table is a section's measurements, in order: a name and a value each,
// or the cells of the columns SetColumns named.
type Table struct {
	columns []string
	rows    [][]string
}

// SetColumns names the table's columns, for rows of that many cells.
func (t *Table) SetColumns(names ...string) { t.columns = names }

// Add appends a measurement.
func (t *Table) Add(name, value string) { t.rows = append(t.rows, []string{name, value}) }

// AddRow appends a row of cells, one per column.
func (t *Table) AddRow(cells ...string) { t.rows = append(t.rows, cells) }

// Len is the number of measurements.
func (t *Table) Len() int { return len(t.rows) }

// WriteSection puts the section named name, with an intro, the table and
// notes, into the report at path.
func WriteSection(path, name, title, intro string, t *Table, notes string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- section %s -->\n## %s\n\n%s\n\n", name, title, strings.TrimSpace(intro))
	fmt.Fprintf(&b, "Machine: %d CPUs, %s/%s, %s. Run at %s.\n\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), time.Now().UTC().Format(time.RFC3339))
	columns := t.columns
	if columns == nil {
		columns = []string{"measurement", "value"}
	}
	b.WriteString("| " + strings.Join(columns, " | ") + " |\n|" + strings.Repeat(" --- |", len(columns)) + "\n")
	for _, r := range t.rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	if notes = strings.TrimSpace(notes); notes != "" {
		b.WriteString("\n" + notes + "\n")
	}
	fmt.Fprintf(&b, "<!-- end %s -->\n", name)
	section := b.String()

	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc := string(old)
	if !strings.HasPrefix(doc, "# Benchmarks") {
		doc = header
	}
	start, end := strings.Index(doc, "<!-- section "+name+" -->"), strings.Index(doc, "<!-- end "+name+" -->")
	if start >= 0 && end > start {
		doc = doc[:start] + section + doc[end+len("<!-- end "+name+" -->\n"):]
	} else {
		doc = strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}

// Main runs a benchmark package's tests and benchmarks, then, if
// RAFTKA_BENCH_REPORT names a report and t has rows, writes t as section
// name there (WriteSection); it exits with the run's code, or 1 if the
// report could not be written.
func Main(m interface{ Run() int }, t *Table, name, title, intro, notes string) {
	code := m.Run()
	if path := os.Getenv("RAFTKA_BENCH_REPORT"); path != "" && t.Len() > 0 {
		if err := WriteSection(path, name, title, intro, t, notes); err != nil {
			fmt.Fprintln(os.Stderr, "write report:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Thousands writes n rounded to a whole number, with a comma between
// thousands, as the reports write counts and rates.
func Thousands(n float64) string {
	s := strconv.FormatInt(int64(math.Round(n)), 10)
	first := 0
	if strings.HasPrefix(s, "-") {
		first = 1
	}
	for i := len(s) - 3; i > first; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Seconds is the whole number of seconds the environment variable env
// sets, or otherwise when it is unset, not a number or not positive: how
// long a suite measures each turn.
func Seconds(env string, otherwise time.Duration) time.Duration {
	if s, err := strconv.Atoi(os.Getenv(env)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return otherwise
}
