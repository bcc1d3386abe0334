package main

import (
	"fmt"
	"math"
	"strings"
)

// plotSVG draws file bytes against turns, one line per mode, with labelled
// axes and a legend. Hand-written SVG keeps the tool free of dependencies.
func plotSVG(rs []benchResult, retain bool) string {
	const (
		w, h                     = 760, 440
		left, right, top, bottom = 90, 30, 50, 60
	)
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	maxTurn, maxBytes := 1, int64(1)
	for _, r := range rs {
		for _, s := range r.samples {
			maxTurn = max(maxTurn, s.turn)
			maxBytes = max(maxBytes, s.bytes)
		}
	}
	unit := float64(1)
	for _, u := range []float64{1 << 30, 1 << 20, 1 << 10} {
		if float64(maxBytes) >= u {
			unit = u
			break
		}
	}
	yMax := niceCeil(float64(maxBytes)/unit) * unit
	x := func(turn int) float64 { return float64(left) + pw*float64(turn)/float64(maxTurn) }
	y := func(b int64) float64 { return float64(top) + ph*(1-float64(b)/yMax) }
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&sb, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	title := "agentstate bench: file size against conversation length"
	fmt.Fprintf(&sb, `<text x="%d" y="28" font-size="16" font-weight="bold">%s</text>`+"\n", left, title)
	for i := 0; i <= 5; i++ {
		v := yMax * float64(i) / 5
		yy := float64(top) + ph*(1-float64(i)/5)
		fmt.Fprintf(&sb, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, yy, w-right, yy)
		fmt.Fprintf(&sb, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-8, yy+4, humanBytes(v))
	}
	for i := 0; i <= 4; i++ {
		turn := maxTurn * i / 4
		xx := x(turn)
		fmt.Fprintf(&sb, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", xx, top, xx, h-bottom)
		fmt.Fprintf(&sb, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", xx, h-bottom+18, turn)
	}
	fmt.Fprintf(&sb, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&sb, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, h-bottom)
	fmt.Fprintf(&sb, `<text x="%.1f" y="%d" text-anchor="middle">turns</text>`+"\n", float64(left)+pw/2, h-18)
	fmt.Fprintf(&sb, `<text x="20" y="%.1f" text-anchor="middle" transform="rotate(-90 20 %.1f)">file bytes</text>`+"\n", float64(top)+ph/2, float64(top)+ph/2)
	colors := []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd"}
	for i, r := range rs {
		var pts []string
		for _, s := range r.samples {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.turn), y(s.bytes)))
		}
		c := colors[i%len(colors)]
		fmt.Fprintf(&sb, `<polyline fill="none" stroke="%s" stroke-width="2.5" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		label := r.Mode
		if r.Every != nil {
			label += fmt.Sprintf(" (K=%d)", *r.Every)
		}
		if retain && r.Mode == "delta" {
			label += " with retention"
		}
		if n := len(r.samples); n > 0 {
			label += ": " + humanBytes(float64(r.samples[n-1].bytes))
		}
		ly := top + 20 + 20*i
		fmt.Fprintf(&sb, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", left+20, ly, left+44, ly, c)
		fmt.Fprintf(&sb, `<text x="%d" y="%d">%s</text>`+"\n", left+50, ly+4, label)
	}
	sb.WriteString("</svg>\n")
	return sb.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func humanBytes(v float64) string {
	switch {
	case v >= 1<<30:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/(1<<30)), ".0") + " GiB"
	case v >= 1<<20:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/(1<<20)), ".0") + " MiB"
	case v >= 1<<10:
		return fmt.Sprintf("%.0f KiB", v/(1<<10))
	}
	return fmt.Sprintf("%.0f B", v)
}
