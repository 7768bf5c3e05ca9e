package nn

import "github.com/emberml/ember/tensor"

// RandomModule is implemented by the modules that draw random numbers while
// training: Dropout, Dropout2d, AlphaDropout, RReLU, MultiheadAttention,
// TransformerEncoderLayer, TransformerDecoderLayer, RNN, LSTM and GRU (and
// the models built from them). Each draws from the generator it was created
// with until SetGenerator replaces it; SetGenerators replaces it in a whole
// model.
type RandomModule interface {
	Module
	// Generator returns the generator the module draws from.
	Generator() *tensor.Generator
	// SetGenerator makes the module draw from g from now on.
	SetGenerator(g *tensor.Generator)
}

// SetGenerators makes m and every module below it that draws random numbers
// (see RandomModule) draw from g, and returns how many modules it changed.
// It panics if g is nil.
func SetGenerators(m Module, g *tensor.Generator) int {
	checkGen("SetGenerators", g)
	n := 0
	walkModules(m, "", func(_ string, mod Module) {
		if r, ok := mod.(RandomModule); ok {
			r.SetGenerator(g)
			n++
		}
	})
	return n
}

// Generators returns the distinct generators that m and the modules below
// it draw from, each under the dotted name of the first module (in
// registration order) that draws from it; m itself is named "". A
// checkpoint that saves these generators' states resumes the model's random
// draws exactly.
func Generators(m Module) map[string]*tensor.Generator {
	out := map[string]*tensor.Generator{}
	seen := map[*tensor.Generator]bool{}
	walkModules(m, "", func(name string, mod Module) {
		r, ok := mod.(RandomModule)
		if !ok {
			return
		}
		if g := r.Generator(); g != nil && !seen[g] {
			seen[g] = true
			out[name] = g
		}
	})
	return out
}

// walkModules calls visit for m and then, depth first in registration
// order, for every module below it, with its dotted name.
func walkModules(m Module, name string, visit func(name string, m Module)) {
	visit(name, m)
	parent, ok := m.(interface{ Children() []NamedModule })
	if !ok {
		return
	}
	for _, c := range parent.Children() {
		child := c.Name
		if name != "" {
			child = name + "." + c.Name
		}
		walkModules(c.Module, child, visit)
	}
}

// Generator returns the generator MultiheadAttention draws its attention
// dropout masks from (it also drew the initial weights).
func (m *MultiheadAttention) Generator() *tensor.Generator { return m.gen }

// SetGenerator makes MultiheadAttention draw its dropout masks from g from
// now on. It panics if g is nil.
func (m *MultiheadAttention) SetGenerator(g *tensor.Generator) {
	checkGen("MultiheadAttention.SetGenerator", g)
	m.gen = g
}

// Generator returns the generator the layer draws its dropout masks from.
func (l *TransformerEncoderLayer) Generator() *tensor.Generator { return l.gen }

// SetGenerator makes the layer, its self-attention included, draw its
// dropout masks from g from now on. It panics if g is nil.
func (l *TransformerEncoderLayer) SetGenerator(g *tensor.Generator) {
	checkGen("TransformerEncoderLayer.SetGenerator", g)
	l.gen = g
	l.SelfAttn.SetGenerator(g)
}

// Generator returns the generator the layer draws its dropout masks from.
func (l *TransformerDecoderLayer) Generator() *tensor.Generator { return l.gen }

// SetGenerator makes the layer, its two attention modules included, draw
// its dropout masks from g from now on. It panics if g is nil.
func (l *TransformerDecoderLayer) SetGenerator(g *tensor.Generator) {
	checkGen("TransformerDecoderLayer.SetGenerator", g)
	l.gen = g
	l.SelfAttn.SetGenerator(g)
	l.MultiheadAttn.SetGenerator(g)
}

// Generator returns the generator the recurrent layer (RNN, LSTM or GRU)
// draws its between-layer dropout masks from.
func (r *recurrent) Generator() *tensor.Generator { return r.gen }

// SetGenerator makes the recurrent layer (RNN, LSTM or GRU) draw its
// between-layer dropout masks from g from now on. It panics if g is nil.
func (r *recurrent) SetGenerator(g *tensor.Generator) {
	checkGen("SetGenerator", g)
	r.gen = g
}
