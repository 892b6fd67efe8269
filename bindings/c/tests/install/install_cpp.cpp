// Install test, C++: found with CMake find_package(redlatch) against an installed prefix
// (redlatch::redlatch, the shared library) and run against the Redis fleet.
#include <redlatch.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>

int main() {
    const char *url = std::getenv("REDLATCH_TEST_URL");
    if (url == nullptr) {
        std::cerr << "REDLATCH_TEST_URL not set: run me through redlatch-fleet\n";
        return 2;
    }
    int passed = 0, failed = 0;
    auto check = [&](bool ok, const char *what) {
        if (ok) {
            passed++;
        } else {
            failed++;
            std::cerr << "check failed: " << what << "\n";
        }
    };
    try {
        redlatch::Client client(url);
        redlatch::Lock lock = client.lock("install:cpp", redlatch::LockOptions().lease(std::chrono::seconds(5)));
        {
            std::lock_guard<redlatch::Lock> held(lock);
            check(lock.owned(), "owned under lock_guard");
        }
        check(!lock.locked(), "released after lock_guard");
        check(redlatch::version() == REDLATCH_VERSION_STRING, "library version = header version");
        try {
            client.lock("");
            check(false, "empty name throws");
        } catch (const redlatch::Error &e) {
            check(e.status() == REDLATCH_INVALID_ARGUMENT, "empty name is INVALID_ARGUMENT");
        }
    } catch (const redlatch::Error &e) {
        check(false, e.what());
    }
    std::cout << passed << " passed, " << failed << " failed" << std::endl;
    return failed == 0 ? 0 : 1;
}
