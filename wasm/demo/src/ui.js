// What the demo page shows in its states, kept apart from the DOM so that
// a Node test (ui.test.mjs) can check it without a browser.

/** The storage panel's label for the bytes the OPFS host holds: the file is in WAL mode, so the database and its -wal (the -journal stays empty). */
export const opfsLabel = "On disk in OPFS (database + WAL)";

/**
 * The page when the engine could not open the chat: a status line, a
 * sentence for the thread panel, and the composer disabled (nothing typed
 * there could be stored). BUSY is a second tab: the file has one owner.
 */
export function openFailure(message) {
  if (/^BUSY\b/.test(message)) {
    return {
      status: "busy: open in another tab",
      banner: "This chat is open in another tab of this browser, and its file can be open in one tab at a time. Close the other tab, then reload this one.",
      composerDisabled: true,
    };
  }
  return { status: `error: ${message}`, banner: `The engine could not open the chat: ${message}. Reload the page to try again.`, composerDisabled: true };
}
