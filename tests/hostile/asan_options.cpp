// Allocation failure is part of what test_hostile checks (a KV cache that cannot be allocated must be a
// lctx::Error). Under AddressSanitizer a failed allocation aborts unless the allocator may return null;
// this default (ASAN_OPTIONS still overrides it) makes it throw std::bad_alloc as in a normal build.
#if defined(__SANITIZE_ADDRESS__)
#define LCTX_HOSTILE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LCTX_HOSTILE_ASAN 1
#endif
#endif

#ifdef LCTX_HOSTILE_ASAN
extern "C" const char *__asan_default_options() {
    return "allocator_may_return_null=1";
}
#endif
#undef LCTX_HOSTILE_ASAN  // a unity batch goes on after this file
