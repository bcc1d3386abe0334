package engine

import (
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/records"
)

func TestSyncTitle(t *testing.T) {
	o := DefaultOptions()
	o.Schema = Schema{MessagesChannel: channels.Messages{}, TitleChannel: channels.LastValue{}}
	db := openTest(t, Memory, &o)
	alice := User("alice")
	for _, th := range []string{"api", "langgraph", "untitled"} {
		if _, err := db.Threads().Create(bg, alice, records.NewThread{ThreadID: th, DisplayName: "New chat"}); err != nil {
			t.Fatal(err)
		}
	}
	// A thread of the thread API: the title channel holds our msgpack.
	mustCommit(t, db, "api", Step{Tasks: []TaskWrites{{TaskID: "titler", Writes: []ChannelWrite{{Channel: TitleChannel, Value: "Trip to Lisbon"}}}}})
	// A LangGraph thread: the title channel holds LangGraph's json serde.
	c := cp("0001", map[string]string{TitleChannel: "1"}, nil)
	c.ChannelValues[TitleChannel] = codec.Blob{Type: "json", Data: []byte(`"Weekly report"`)}
	mustPut(t, db, Config{ThreadID: "langgraph"}, c, nil, map[string]string{TitleChannel: "1"})
	for th, want := range map[string]string{"api": "Trip to Lisbon", "langgraph": "Weekly report", "untitled": "New chat"} {
		title, changed, err := db.Threads().SyncTitle(bg, alice, th)
		if err != nil {
			t.Fatalf("%s: %v", th, err)
		}
		if changed != (th != "untitled") || changed && title != want {
			t.Fatalf("%s: SyncTitle = %q, %v", th, title, changed)
		}
		rec, err := db.Threads().Get(bg, alice, th)
		if err != nil || rec.DisplayName != want {
			t.Fatalf("%s: display name %q (%v), want %q", th, rec.DisplayName, err, want)
		}
	}
	if _, _, err := db.Threads().SyncTitle(bg, User("mallory"), "api"); err == nil {
		t.Fatal("another owner synced alice's thread")
	}
}
