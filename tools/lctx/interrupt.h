// Ctrl-C as llama.cpp's interactive mode treats it: while a reply is being generated, the first
// SIGINT asks it to stop (the session goes on); a second one during the same reply, or one while no
// reply runs (at the prompt), ends the program with status 130.
#pragma once

namespace lctx::cli {

// Installs the SIGINT handler (idempotent).
void interrupt_install();
// Marks the start and end of a reply; begin clears an earlier request.
void interrupt_begin_reply();
void interrupt_end_reply();
// True once Ctrl-C asked the current reply to stop.
bool interrupt_requested();

}  // namespace lctx::cli
