package cardinality

import (
	"bytes"
	"slices"
	"strings"

	"golang.org/x/net/html"
)

// node is an element of the DOM Chromium dumped, with what the checks ask of it.
type node struct{ *html.Node }

type nodes []node

func parseDOM(b []byte) (node, error) {
	doc, err := html.Parse(bytes.NewReader(b))
	return node{doc}, err
}

type pred func(node) bool

func isTag(tag string) pred { return func(n node) bool { return n.Data == tag } }

func hasClass(class string) pred { return func(n node) bool { return n.hasClass(class) } }

// all returns the elements below n that satisfy every pred, in document order.
func (n node) all(preds ...pred) nodes {
	var out nodes
	for d := range n.Descendants() {
		if d.Type != html.ElementNode {
			continue
		}
		if e := (node{d}); !slices.ContainsFunc(preds, func(p pred) bool { return !p(e) }) {
			out = append(out, e)
		}
	}
	return out
}

// byID returns the element with this id, or a node that holds nothing.
func (n node) byID(id string) node {
	for _, e := range n.all() {
		if e.attr("id") == id {
			return e
		}
	}
	return node{&html.Node{Type: html.ElementNode}}
}

func (ns nodes) first() node {
	if len(ns) == 0 {
		return node{&html.Node{Type: html.ElementNode}}
	}
	return ns[0]
}

func (n node) attr(key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func (n node) hasClass(class string) bool {
	return slices.Contains(strings.Fields(n.attr("class")), class)
}

// text is the element's text as it reads: its text nodes, white space collapsed.
func (n node) text() string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
			b.WriteByte(' ')
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
