package main

import (
	"strings"
	"unicode/utf8"
)

// table is a Markdown table whose columns are padded, so that it reads as well
// in a terminal as rendered.
type table struct {
	header []string
	// right marks the columns aligned right (figures).
	right []bool
	rows  [][]string
}

// newTable makes a table; a header ending in ">" is a right-aligned column
// (the ">" is dropped).
func newTable(header ...string) *table {
	t := &table{}
	for _, h := range header {
		name, right := strings.CutSuffix(h, ">")
		t.header = append(t.header, name)
		t.right = append(t.right, right)
	}
	return t
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) String() string {
	widths := make([]int, len(t.header))
	for _, row := range append([][]string{t.header}, t.rows...) {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c), 3)
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i, c := range cells {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if t.right[i] {
				b.WriteString(" " + pad + c + " |")
			} else {
				b.WriteString(" " + c + pad + " |")
			}
		}
		b.WriteString("\n")
	}
	line(t.header)
	b.WriteString("|")
	for i, w := range widths {
		if t.right[i] {
			b.WriteString(" " + strings.Repeat("-", w-1) + ": |")
		} else {
			b.WriteString(" " + strings.Repeat("-", w) + " |")
		}
	}
	b.WriteString("\n")
	for _, row := range t.rows {
		line(row)
	}
	return b.String()
}
