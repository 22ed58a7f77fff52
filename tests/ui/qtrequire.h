#pragma once
// requireall.h for Qt Test scenarios: the one way a scenario gives up for something missing (a dataset, a tool, a
// privilege): skipped with `what` (say what to install), or failed with it under TRAINDECK_REQUIRE_ALL=1, which CI
// sets. A skip is never a silent pass.
#include "requireall.h"

#include <QByteArray>
#include <QString>
#include <QTest>

namespace traindeck::test {

inline QByteArray missing_message(const QString& what) {
    return (require_all() ? what + " (TRAINDECK_REQUIRE_ALL=1 is set: nothing may be skipped)" : what).toUtf8();
}

} // namespace traindeck::test

#define TRAINDECK_REQUIRE(present, what)                                                                               \
    do {                                                                                                               \
        if (!(present)) {                                                                                              \
            const QByteArray why_missing = ::traindeck::test::missing_message(what);                                   \
            if (::traindeck::test::require_all())                                                                      \
                QFAIL(why_missing.constData());                                                                        \
            QSKIP(why_missing.constData());                                                                            \
        }                                                                                                              \
    } while (false)
