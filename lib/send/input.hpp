// input.hpp: where a send's bytes come from (lib/send/: what mq-send does between its options
// and Store::Append; it leans on base/ and store/ only, never on wire/, so that mq-send links
// no libxml2, zstd or ISA-L): a body read whole from a descriptor or a file, and the bytes of
// --extension.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "base/status.hpp"

namespace mq {

// Appends everything `fd` gives until end of file to `out`, retrying on EINTR. `name` is the
// subject of an error ("stdin", a file name).
Status ReadAll(int fd, const std::string& name, std::string& out);

// Splits what `fd` gives on `sep` and calls `fn` on each record (the separator left out; a
// last one without it included) as soon as it is whole, so that a reader at the other end of
// a pipe can wait for what `fn` does with it. A record whole in one read is passed from the
// read's buffer; memory is bounded by the longest record. Stops at `fn`'s first error.
// `idle`, if given, runs whenever `fd` has nothing to read at the moment, before the read that
// waits for more (a writer that pauses: what came so far can be committed meanwhile).
Status ForEachRecord(int fd, char sep, const std::function<Status(std::string_view)>& fn,
                     const std::function<Status()>& idle = nullptr);

// A message body: the contents of `file`, or all of stdin when `file` is empty or "-". A file
// that does not exist is E_INVALIDARG ("cannot open body file: no such file").
Status ReadBody(const std::string& file, std::string& out);

// --extension: hex digits, or @FILE for the bytes of a file. Bad hex digits, a bare "@" and a
// file that does not exist are E_INVALIDARG.
Status ReadExtension(const std::string& text, std::string& out);

}  // namespace mq
