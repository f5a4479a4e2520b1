// xml_check.cpp: the well-formed XML check by libxml2 in this process (xml_check.hpp).
#include "store/xml_check.hpp"

#include <libxml/parser.h>

#include <mutex>

#include <fmt/format.h>

namespace mq {

Result<std::string> XmlWellFormedError(std::string_view body) {
  static std::once_flag init;
  std::call_once(init, [] { xmlInitParser(); });
  xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
  if (!ctxt) return Status::InsufficientResources("cannot allocate an XML parser");
  // No network, no external entities or DTD loading: a check of form, never a fetch.
  xmlDocPtr doc =
      xmlCtxtReadMemory(ctxt, body.data(), static_cast<int>(body.size()), nullptr, nullptr,
                        XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  bool ok = doc != nullptr && ctxt->wellFormed;
  std::string error;
  if (const xmlError* err = xmlCtxtGetLastError(ctxt); !ok && err && err->message) {
    error = err->message;
    while (!error.empty() && (error.back() == '\n' || error.back() == ' ')) error.pop_back();
    if (err->line > 0) error += fmt::format(" (line {})", err->line);
  }
  if (doc) xmlFreeDoc(doc);
  xmlFreeParserCtxt(ctxt);
  if (ok) return std::string();
  return error.empty() ? std::string("not well-formed") : error;
}

Result<std::vector<std::string>> XmlWellFormedErrors(const std::vector<std::string_view>& bodies) {
  std::vector<std::string> errors;
  errors.reserve(bodies.size());
  for (std::string_view body : bodies) {
    auto e = XmlWellFormedError(body);
    if (!e.ok()) return e.status();
    errors.push_back(std::move(*e));
  }
  return errors;
}

}  // namespace mq
