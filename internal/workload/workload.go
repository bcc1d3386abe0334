// Package workload is the fixed workload of `agentstate bench` and of the js
// build's bench, in one place so that the native and WebAssembly figures
// measure the same bytes.
package workload

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/agentstate/agentstate/codec"
)

// Sizes of the workload's messages, in bytes of content.
const (
	HumanBytes = 200
	AIBytes    = 800
)

// Turn returns the two messages of turn i of the bench workload: a
// human and an AI message of English-like words with stable ids. Repeating
// one letter would compress to nothing and flatter every compressed figure;
// text made of common words compresses about as well as real chat does.
func Turn(i int) [2]codec.Message {
	return [2]codec.Message{
		{ID: fmt.Sprintf("human-%05d", i), Type: codec.Human, Content: benchText(uint64(2*i), HumanBytes)},
		{ID: fmt.Sprintf("ai-%05d", i), Type: codec.AI, Content: benchText(uint64(2*i+1), AIBytes)},
	}
}

// benchWords is split on first use, not at package init: the GOOS=js
// engine module links this package (its bench call), and every init runs on
// its start-up path.
var benchWords = sync.OnceValue(func() []string {
	return strings.Fields(benchWordList)
})

const benchWordList = `the of and to in is that for it as with was on be at by this had not are but from or
have an they which one you were her all she there would their we him been has when who will more no if out so
said what up its about into than them can only other new some could time these two may then do first any my now
such like our over man me even most made after also did many before must through back years where much your way
well down should because each just those people how too little state good very make world still own see men work
long get here between both life being under never day same another know while last might us great old year off
come since against go came right used take three agent model tool call result answer question search file plan
step memory context thread checkpoint state message summary error retry weather report data table query user
assistant system reply update review draft final version branch merge deploy server client request response`

// benchText returns deterministic text of exactly n bytes for seed.
func benchText(seed uint64, n int) string {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		words := benchWords()
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()[:n]
}
