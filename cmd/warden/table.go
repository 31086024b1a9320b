package main

import (
	"io"
	"strings"
	"unicode"
)

// table aligns rows of cells in columns by their display width on a
// terminal: a wide character (CJK, most emoji) takes two columns, a
// combining mark or zero-width joiner none (text/tabwriter counts runes,
// which misaligns them). Each cell but a row's last is padded to its
// column's widest plus two spaces, as text/tabwriter would pad them.
type table struct {
	w    io.Writer
	rows [][]string
}

// row adds a row.
func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

// flush writes the rows added since the last flush, aligned among
// themselves.
func (t *table) flush() {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r[:max(len(r)-1, 0)] {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], displayWidth(c))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-displayWidth(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	_, _ = io.WriteString(t.w, b.String())
	t.rows = t.rows[:0]
}

// tabTable is a stand-in for text/tabwriter that aligns by display width
// (see table): what is written is buffered, a cell ends at a tab and a row
// at a newline, and Flush writes the rows aligned.
type tabTable struct {
	t   table
	buf []byte
}

// newTabTable returns a tabTable writing to w.
func newTabTable(w io.Writer) *tabTable { return &tabTable{t: table{w: w}} }

// Write buffers p; it never fails.
func (tt *tabTable) Write(p []byte) (int, error) {
	tt.buf = append(tt.buf, p...)
	return len(p), nil
}

// Flush writes the rows written since the last Flush, aligned.
func (tt *tabTable) Flush() error {
	if len(tt.buf) == 0 {
		return nil
	}
	for line := range strings.SplitSeq(strings.TrimSuffix(string(tt.buf), "\n"), "\n") {
		tt.t.row(strings.Split(line, "\t")...)
	}
	tt.buf = tt.buf[:0]
	tt.t.flush()
	return nil
}

// displayWidth is how many terminal columns s takes: two for each wide
// rune, none for a combining mark, a format character (a zero-width
// joiner) or a variation selector, one for any other.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf) || (r >= 0xfe00 && r <= 0xfe0f):
		case wide(r):
			n += 2
		default:
			n++
		}
	}
	return n
}

// wideRanges are the ranges of East Asian Wide and Fullwidth characters
// and of emoji shown wide, by their first and last rune.
var wideRanges = [][2]rune{
	{0x1100, 0x115f},   // Hangul Jamo initials
	{0x231a, 0x231b},   // watch, hourglass
	{0x23e9, 0x23ec},   // media buttons
	{0x23f0, 0x23f0},   // alarm clock
	{0x23f3, 0x23f3},   // hourglass flowing
	{0x25fd, 0x25fe},   // small squares
	{0x2614, 0x2615},   // umbrella, hot beverage
	{0x2648, 0x2653},   // zodiac
	{0x267f, 0x267f},   // wheelchair
	{0x2693, 0x2693},   // anchor
	{0x26a1, 0x26a1},   // high voltage
	{0x26aa, 0x26ab},   // circles
	{0x26bd, 0x26be},   // balls
	{0x26c4, 0x26c5},   // snowman, sun behind cloud
	{0x26ce, 0x26ce},   // ophiuchus
	{0x26d4, 0x26d4},   // no entry
	{0x26ea, 0x26ea},   // church
	{0x26f2, 0x26f3},   // fountain, golf
	{0x26f5, 0x26f5},   // sailboat
	{0x26fa, 0x26fa},   // tent
	{0x26fd, 0x26fd},   // fuel pump
	{0x2705, 0x2705},   // check mark button
	{0x270a, 0x270b},   // fists
	{0x2728, 0x2728},   // sparkles
	{0x274c, 0x274c},   // cross mark
	{0x274e, 0x274e},   // cross mark button
	{0x2753, 0x2755},   // question marks
	{0x2757, 0x2757},   // exclamation mark
	{0x2795, 0x2797},   // plus, minus, divide
	{0x27b0, 0x27b0},   // curly loop
	{0x27bf, 0x27bf},   // double curly loop
	{0x2b1b, 0x2b1c},   // large squares
	{0x2b50, 0x2b50},   // star
	{0x2b55, 0x2b55},   // circle
	{0x2e80, 0x303e},   // CJK radicals, ideographic description, CJK symbols
	{0x3041, 0x33ff},   // kana, bopomofo, Hangul compatibility, CJK compatibility
	{0x3400, 0x4dbf},   // CJK extension A
	{0x4e00, 0x9fff},   // CJK unified ideographs
	{0xa000, 0xa4cf},   // Yi
	{0xa960, 0xa97f},   // Hangul Jamo extended A
	{0xac00, 0xd7a3},   // Hangul syllables
	{0xf900, 0xfaff},   // CJK compatibility ideographs
	{0xfe10, 0xfe19},   // vertical forms
	{0xfe30, 0xfe6f},   // CJK compatibility forms, small forms
	{0xff00, 0xff60},   // fullwidth forms
	{0xffe0, 0xffe6},   // fullwidth signs
	{0x16fe0, 0x18cff}, // Tangut and others
	{0x1b000, 0x1b2ff}, // kana supplement and extensions, Nushu
	{0x1f004, 0x1f004}, // mahjong red dragon
	{0x1f0cf, 0x1f0cf}, // joker
	{0x1f18e, 0x1f18e}, // AB button
	{0x1f191, 0x1f19a}, // squared words
	{0x1f200, 0x1f2ff}, // enclosed ideographic supplement
	{0x1f300, 0x1f64f}, // pictographs, emoticons
	{0x1f680, 0x1f6ff}, // transport and map
	{0x1f7e0, 0x1f7eb}, // coloured circles and squares
	{0x1f90c, 0x1f9ff}, // supplemental symbols and pictographs
	{0x1fa70, 0x1faff}, // symbols and pictographs extended A
	{0x20000, 0x3fffd}, // CJK extensions B and later
}

// wide reports whether r is shown two columns wide.
func wide(r rune) bool {
	if r < 0x1100 {
		return false
	}
	for _, w := range wideRanges {
		if r >= w[0] && r <= w[1] {
			return true
		}
	}
	return false
}
