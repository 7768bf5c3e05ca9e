package npy

import (
	"errors"
	"fmt"
	"strconv"
)

// pyTuple is a parsed Python tuple literal.
type pyTuple []any

// pyList is a parsed Python list literal.
type pyList []any

// maxNesting bounds the nesting depth of parsed literals.
const maxNesting = 16

// pyParser parses the small subset of Python literal syntax that appears in
// .npy headers: dicts with string keys, tuples, lists, strings without
// escapes, integers, True, False and None. Values are returned as
// map[string]any, pyTuple, pyList, string, int64, bool and nil.
type pyParser struct {
	s     []byte
	pos   int
	depth int
}

// parse parses one literal that must span the whole input, apart from
// surrounding whitespace.
func (p *pyParser) parse() (any, error) {
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.s) {
		return nil, fmt.Errorf("unexpected %q after the literal at offset %d", p.s[p.pos], p.pos)
	}
	return v, nil
}

func (p *pyParser) skipSpace() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end of input.
func (p *pyParser) peek() byte {
	p.skipSpace()
	if p.pos >= len(p.s) {
		return 0
	}
	return p.s[p.pos]
}

func (p *pyParser) value() (any, error) {
	c := p.peek()
	switch {
	case c == 0:
		return nil, errors.New("unexpected end of header")
	case c == '{':
		return p.nested(p.dict)
	case c == '(':
		return p.nested(p.tuple)
	case c == '[':
		return p.nested(p.list)
	case c == '\'' || c == '"':
		return p.str()
	case c == '-' || c == '+' || (c >= '0' && c <= '9'):
		return p.integer()
	case isIdentByte(c):
		return p.ident()
	}
	return nil, fmt.Errorf("unexpected %q at offset %d", c, p.pos)
}

// nested runs parse one level deeper, enforcing maxNesting.
func (p *pyParser) nested(parse func() (any, error)) (any, error) {
	if p.depth >= maxNesting {
		return nil, errors.New("literal nested too deeply")
	}
	p.depth++
	defer func() { p.depth-- }()
	return parse()
}

// items parses comma-separated elements up to the closing byte, allowing a
// trailing comma. It reports whether any comma was seen. The opening byte
// must already be consumed.
func (p *pyParser) items(closing byte, elem func() error) (comma bool, err error) {
	for {
		if p.peek() == closing {
			p.pos++
			return comma, nil
		}
		if err := elem(); err != nil {
			return false, err
		}
		switch c := p.peek(); c {
		case ',':
			p.pos++
			comma = true
		case closing:
		case 0:
			return false, errors.New("unexpected end of header")
		default:
			return false, fmt.Errorf("expected ',' or %q at offset %d, found %q", closing, p.pos, c)
		}
	}
}

func (p *pyParser) dict() (any, error) {
	p.pos++ // '{'
	d := make(map[string]any)
	_, err := p.items('}', func() error {
		k, err := p.value()
		if err != nil {
			return err
		}
		key, ok := k.(string)
		if !ok {
			return fmt.Errorf("dict key %v is not a string", k)
		}
		if _, dup := d[key]; dup {
			return fmt.Errorf("duplicate dict key %q", key)
		}
		if p.peek() != ':' {
			return fmt.Errorf("expected ':' after dict key %q", key)
		}
		p.pos++
		v, err := p.value()
		if err != nil {
			return err
		}
		d[key] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (p *pyParser) tuple() (any, error) {
	p.pos++ // '('
	var t pyTuple
	comma, err := p.items(')', func() error {
		v, err := p.value()
		t = append(t, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(t) == 1 && !comma {
		return t[0], nil // a parenthesized expression, not a tuple
	}
	if t == nil {
		t = pyTuple{}
	}
	return t, nil
}

func (p *pyParser) list() (any, error) {
	p.pos++ // '['
	l := pyList{}
	_, err := p.items(']', func() error {
		v, err := p.value()
		l = append(l, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (p *pyParser) str() (any, error) {
	quote := p.s[p.pos]
	start := p.pos + 1
	for i := start; i < len(p.s); i++ {
		switch p.s[i] {
		case quote:
			p.pos = i + 1
			return string(p.s[start:i]), nil
		case '\\':
			return nil, errors.New("escape sequences in strings are not supported")
		case '\n':
			return nil, errors.New("newline in string literal")
		}
	}
	return nil, errors.New("unterminated string literal")
}

func (p *pyParser) integer() (any, error) {
	start := p.pos
	if c := p.s[p.pos]; c == '-' || c == '+' {
		p.pos++
	}
	digits := p.pos
	for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
		p.pos++
	}
	if p.pos == digits {
		return nil, fmt.Errorf("malformed number at offset %d", start)
	}
	text := string(p.s[start:p.pos])
	// Python 2 wrote long integers with an L suffix.
	if p.pos < len(p.s) && (p.s[p.pos] == 'L' || p.s[p.pos] == 'l') {
		p.pos++
	}
	if p.pos < len(p.s) && (isIdentByte(p.s[p.pos]) || p.s[p.pos] == '.') {
		return nil, fmt.Errorf("unsupported number at offset %d", start)
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("integer %s out of range", text)
	}
	return n, nil
}

func (p *pyParser) ident() (any, error) {
	start := p.pos
	for p.pos < len(p.s) && (isIdentByte(p.s[p.pos]) || (p.s[p.pos] >= '0' && p.s[p.pos] <= '9')) {
		p.pos++
	}
	switch word := string(p.s[start:p.pos]); word {
	case "True":
		return true, nil
	case "False":
		return false, nil
	case "None":
		return nil, nil
	default:
		return nil, fmt.Errorf("unsupported name %q at offset %d", word, start)
	}
}

func isIdentByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
