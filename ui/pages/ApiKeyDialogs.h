#pragma once

#include "apikeys/ApiKeyAdmin.h"

#include <QDialog>
#include <memory>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace sy::ui {

// Asks for a new key's name, expiry and token limit. The fields become an ApiKeyRequest as the CLI's options
// would, and OK is refused (the dialog stays open, saying why) unless apiKeyRecordFor() accepts it: the same
// check `switchyard apikeys create` makes.
class CreateApiKeyDialog : public QDialog
{
    Q_OBJECT
public:
    explicit CreateApiKeyDialog(QWidget *parent = nullptr);

    ApiKeyRequest request() const;
    QString error() const;

    void accept() override;

private:
    void updateEnabled();

    QLineEdit *m_name;
    QCheckBox *m_expires;
    QSpinBox *m_days;
    QCheckBox *m_limit;
    QLineEdit *m_tokens;
    QComboBox *m_window;
    QLabel *m_error;
};

// Shows a just-created key once, with a copy button. The key lives only in `secret` (shared with nobody else
// that keeps it) and in this dialog's line edit; both are wiped when the dialog closes or is destroyed.
class ShownApiKeyDialog : public QDialog
{
    Q_OBJECT
public:
    ShownApiKeyDialog(const QString &keyId, std::shared_ptr<QByteArray> secret, QWidget *parent = nullptr);
    ~ShownApiKeyDialog() override;

    void done(int result) override;

private:
    void wipe();

    std::shared_ptr<QByteArray> m_secret;
    QLineEdit *m_key;
};

} // namespace sy::ui
