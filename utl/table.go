package utl

import (
	"io"
	"strings"
)

// writeTable draws a one-row table as etcdutl's tablewriter does: box
// drawing borders, a centred upper-case header and right-aligned cells, each
// padded by one space.
func writeTable(w io.Writer, header, row []string) {
	hdr := make([]string, len(header))
	widths := make([]int, len(header))
	for i, h := range header {
		hdr[i] = strings.ToUpper(h)
		widths[i] = max(len([]rune(hdr[i])), len([]rune(row[i])))
	}
	var b strings.Builder
	b.WriteString(rule("┌", "┬", "┐", widths))
	b.WriteString(line(hdr, widths, center))
	b.WriteString(rule("├", "┼", "┤", widths))
	b.WriteString(line(row, widths, right))
	b.WriteString(rule("└", "┴", "┘", widths))
	io.WriteString(w, b.String())
}

func rule(left, mid, end string, widths []int) string {
	parts := make([]string, len(widths))
	for i, n := range widths {
		parts[i] = strings.Repeat("─", n+2)
	}
	return left + strings.Join(parts, mid) + end + "\n"
}

func line(cells []string, widths []int, align func(string, int) string) string {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = " " + align(c, widths[i]) + " "
	}
	return "│" + strings.Join(parts, "│") + "│\n"
}

// center puts the extra space of an odd gap on the right, as tablewriter.
func center(s string, width int) string {
	gap := width - len([]rune(s))
	return strings.Repeat(" ", gap/2) + s + strings.Repeat(" ", gap-gap/2)
}

func right(s string, width int) string {
	return strings.Repeat(" ", width-len([]rune(s))) + s
}
