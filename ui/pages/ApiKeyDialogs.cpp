#include "pages/ApiKeyDialogs.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDateTime>
#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpressionValidator>
#include <QSpinBox>
#include <QVBoxLayout>

namespace sy::ui {

CreateApiKeyDialog::CreateApiKeyDialog(QWidget *parent) : QDialog(parent)
{
    setObjectName(QStringLiteral("apiKeyCreateDialog"));
    setWindowTitle(tr("Create API key"));
    auto *layout = new QVBoxLayout(this);
    auto *form = new QFormLayout;
    m_name = new QLineEdit(this);
    m_name->setObjectName(QStringLiteral("apiKeyName"));
    m_name->setPlaceholderText(tr("optional, e.g. laptop or ci"));
    form->addRow(tr("Name"), m_name);

    m_expires = new QCheckBox(tr("Expires after"), this);
    m_expires->setObjectName(QStringLiteral("apiKeyExpires"));
    m_days = new QSpinBox(this);
    m_days->setObjectName(QStringLiteral("apiKeyExpiryDays"));
    // The spin box may hold any number: the shared check below decides what is acceptable.
    m_days->setRange(0, 99999);
    m_days->setValue(90);
    m_days->setSuffix(tr(" days"));
    form->addRow(m_expires, m_days);

    m_limit = new QCheckBox(tr("Token limit"), this);
    m_limit->setObjectName(QStringLiteral("apiKeyLimit"));
    auto *limitRow = new QHBoxLayout;
    m_tokens = new QLineEdit(this);
    m_tokens->setObjectName(QStringLiteral("apiKeyLimitTokens"));
    m_tokens->setPlaceholderText(tr("tokens"));
    m_window = new QComboBox(this);
    m_window->setObjectName(QStringLiteral("apiKeyLimitWindow"));
    for (const QString &w : apiKeyWindowChoices())
        m_window->addItem(tr("per %1").arg(w), w);
    limitRow->addWidget(m_tokens);
    limitRow->addWidget(m_window);
    form->addRow(m_limit, limitRow);
    layout->addLayout(form);

    auto *note = new QLabel(tr("Tokens count over a sliding window, as the request log books them; a request "
                               "that arrives when the window's tokens reach the limit gets 429."),
                            this);
    note->setWordWrap(true);
    layout->addWidget(note);
    m_error = new QLabel(this);
    m_error->setObjectName(QStringLiteral("apiKeyCreateError"));
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: palette(highlight);"));
    layout->addWidget(m_error);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Create"));
    buttons->button(QDialogButtonBox::Ok)->setObjectName(QStringLiteral("apiKeyCreateOk"));
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &CreateApiKeyDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &CreateApiKeyDialog::reject);
    connect(m_expires, &QCheckBox::toggled, this, &CreateApiKeyDialog::updateEnabled);
    connect(m_limit, &QCheckBox::toggled, this, &CreateApiKeyDialog::updateEnabled);
    updateEnabled();
}

void CreateApiKeyDialog::updateEnabled()
{
    m_days->setEnabled(m_expires->isChecked());
    m_tokens->setEnabled(m_limit->isChecked());
    m_window->setEnabled(m_limit->isChecked());
}

ApiKeyRequest CreateApiKeyDialog::request() const
{
    // Field by field what the CLI's options would carry: an empty name is no --name, a ticked box its option.
    ApiKeyRequest r;
    if (!m_name->text().isEmpty())
        r.name = m_name->text();
    if (m_expires->isChecked())
        r.expiresDays = QString::number(m_days->value());
    if (m_limit->isChecked()) {
        r.limitTokens = m_tokens->text();
        r.limitWindow = m_window->currentData().toString();
    }
    return r;
}

QString CreateApiKeyDialog::error() const
{
    return m_error->text();
}

void CreateApiKeyDialog::accept()
{
    QString why;
    if (!apiKeyRecordFor(request(), QDateTime::currentMSecsSinceEpoch(), &why)) {
        m_error->setText(tr("Not created: %1").arg(why));
        return;
    }
    m_error->clear();
    QDialog::accept();
}

ShownApiKeyDialog::ShownApiKeyDialog(const QString &keyId, std::shared_ptr<QByteArray> secret, QWidget *parent)
    : QDialog(parent), m_secret(std::move(secret))
{
    setObjectName(QStringLiteral("apiKeyShownDialog"));
    setWindowTitle(tr("API key %1").arg(keyId));
    auto *layout = new QVBoxLayout(this);
    auto *warning = new QLabel(tr("<b>Copy this key now: you will not see it again.</b> Switchyard keeps only a "
                                  "hash of it. If it is lost, revoke it and create a new one."),
                               this);
    warning->setObjectName(QStringLiteral("apiKeyShownWarning"));
    warning->setWordWrap(true);
    layout->addWidget(warning);

    auto *row = new QHBoxLayout;
    m_key = new QLineEdit(this);
    m_key->setObjectName(QStringLiteral("apiKeyShownEdit"));
    m_key->setReadOnly(true);
    m_key->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    // Straight from the one buffer (no intermediate QString kept anywhere).
    m_key->setText(QString::fromLatin1(*m_secret));
    m_key->setMinimumWidth(m_key->fontMetrics().horizontalAdvance(m_key->text()) + 24);
    auto *copy = new QPushButton(tr("Copy to clipboard"), this);
    copy->setObjectName(QStringLiteral("apiKeyCopyButton"));
    row->addWidget(m_key);
    row->addWidget(copy);
    layout->addLayout(row);
    auto *usage = new QLabel(tr("Clients send it as \"Authorization: Bearer <key>\" (the API key setting of "
                                "OpenAI-compatible clients) or as \"x-api-key: <key>\"."),
                             this);
    usage->setWordWrap(true);
    layout->addWidget(usage);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    buttons->button(QDialogButtonBox::Close)->setObjectName(QStringLiteral("apiKeyShownClose"));
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::rejected, this, &ShownApiKeyDialog::reject);
    connect(copy, &QPushButton::clicked, this, [this, copy] {
        if (m_secret && !m_secret->isEmpty())
            QApplication::clipboard()->setText(QString::fromLatin1(*m_secret));
        copy->setText(tr("Copied"));
    });
}

ShownApiKeyDialog::~ShownApiKeyDialog()
{
    wipe();
}

void ShownApiKeyDialog::done(int result)
{
    wipe();
    QDialog::done(result);
}

void ShownApiKeyDialog::wipe()
{
    // text() and displayText() share their buffers with the widget's own text and its layout's copy: wiping
    // those strings wipes the widget's copies in place.
    QString shown = m_key->text();
    wipeSecret(shown);
    QString displayed = m_key->displayText();
    wipeSecret(displayed);
    m_key->clear();
    if (m_secret)
        wipeSecret(*m_secret);
    m_secret.reset();
}

} // namespace sy::ui
