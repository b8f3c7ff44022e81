// Package positive fills settings whose zero means "the default".
//
// Claims:
//  1. Or(v, def) is v when v > 0 and def otherwise: a zero or negative
//     size, count or interval takes its default, as Aerie's options
//     document ("Zero fields take the defaults").
//  2. Settings where a negative value means something (IdleTimeout < 0:
//     never) do not use it; cmp.Or keeps those.
package positive
