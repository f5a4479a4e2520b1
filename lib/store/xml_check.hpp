// xml_check.hpp: whether a body is well-formed XML, for a message type whose validation is
// WELL_FORMED_XML (conversation.hpp, BodyFault). One function, two implementations chosen
// when a program is linked (as accounts.hpp's):
//  - xml_check.cpp, in libmq: libxml2 in this process. mq-admin and the unit tests link it.
//  - xml_helper.cpp, compiled into mq-send, mq-peek, mq-receive and mq-watch: those are
//    linked statically and load no shared library (libxml2, with its ICU, zlib and lzma, cost
//    every start 1.2-1.7 ms when linked, and a static program cannot dlopen it safely). Their
//    checks go to one `mq-admin message-type check --validation well-formed-xml --null`
//    beside them, started at the first XML body a process checks and kept until it exits.
// A check never runs inside a store transaction: bodies are checked before a send's write
// transaction begins (store/send.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.hpp"

namespace mq {

// "" if `body` is well-formed XML 1.0, else libxml2's reason ("Opening and ending tag
// mismatch: a line 1 and b (line 1)"). No network, no external entities, no DTD loading. An
// error only if no check could be made (the helper cannot be started or ended).
Result<std::string> XmlWellFormedError(std::string_view body);
// The same for several bodies, in their order. The helper gets them all before its answers
// are read (both pipes polled), so that a batch costs one round trip, not one per body.
Result<std::vector<std::string>> XmlWellFormedErrors(const std::vector<std::string_view>& bodies);

}  // namespace mq
