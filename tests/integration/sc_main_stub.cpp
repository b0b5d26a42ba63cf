// Debian's libsystemc.so carries a main() that calls sc_main(); Catch2 supplies the main()
// these tests use, but the symbol must still resolve.
extern "C" int sc_main(int, char**) {
  return 0;
}
