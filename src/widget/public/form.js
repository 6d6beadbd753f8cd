/*
 * Embeddable lead form of visa-crm-api, served at /widget/v1/form.js. No framework, no build step, no globals
 * beyond window.VisaLeadForm. Paste on a page:
 *
 *   <script src="https://<service>/widget/v1/form.js" data-key="key_live_pub_..." async></script>
 *
 * The form appears where the script tag is (or inside the element named by data-target="#css-selector").
 */
/* global window, document, navigator, fetch, CustomEvent */
(function () {
  'use strict';

  // Replaced by the service with the limits of its LeadCreate schema, so the form checks what the server checks.
  var RULES = {/* rules */};

  var VISA_LABELS = {
    student: 'Student',
    work: 'Work',
    pr: 'Permanent residence',
    visitor: 'Visitor',
    spouse_dependent: 'Spouse or dependant',
    business: 'Business',
  };
  var CAPTCHA = {
    turnstile: { src: 'https://challenges.cloudflare.com/turnstile/v0/api.js', global: 'turnstile' },
    hcaptcha: { src: 'https://js.hcaptcha.com/1/api.js', global: 'hcaptcha' },
    recaptcha: { src: 'https://www.google.com/recaptcha/api.js', global: 'grecaptcha' },
  };
  var UTM_KEYS = ['source', 'medium', 'campaign', 'term', 'content'];
  var STYLE_ID = 'vcf-styles';
  var CSS = [
    '.vcf-root{--vcf-brand:#1f4b99;--vcf-on-brand:#fff;box-sizing:border-box;max-width:34rem;font:inherit;color:#1a1a1a;background:#fff;border:1px solid #d0d4da;border-radius:10px;padding:1.25rem 1.25rem 1rem;line-height:1.45}',
    '.vcf-root *,.vcf-root *::before,.vcf-root *::after{box-sizing:inherit}',
    '.vcf-header{display:flex;align-items:center;gap:.75rem;margin:0 0 1rem;border-bottom:3px solid var(--vcf-brand);padding-bottom:.75rem}',
    '.vcf-logo{max-height:44px;max-width:140px;object-fit:contain}',
    '.vcf-title{margin:0;font-size:1.2rem;font-weight:650}',
    '.vcf-test{margin:0 0 1rem;padding:.4rem .6rem;background:#fff4d6;border:1px solid #e3b341;border-radius:6px;font-size:.85rem}',
    '.vcf-field{margin:0 0 .9rem;border:0;padding:0;min-width:0}',
    '.vcf-label{display:block;font-weight:600;margin:0 0 .25rem}',
    '.vcf-req{color:#b3261e;margin-left:.15rem}',
    '.vcf-input{display:block;width:100%;padding:.55rem .65rem;border:1px solid #8a9099;border-radius:6px;font:inherit;color:inherit;background:#fff}',
    '.vcf-input:focus,.vcf-check input:focus,.vcf-submit:focus{outline:3px solid var(--vcf-brand);outline-offset:2px}',
    '.vcf-input[aria-invalid=true]{border-color:#b3261e;border-width:2px}',
    'textarea.vcf-input{min-height:5.5rem;resize:vertical}',
    '.vcf-help{margin:.2rem 0 0;font-size:.85rem;color:#4a4f57}',
    '.vcf-error{margin:.25rem 0 0;font-size:.88rem;color:#b3261e;font-weight:600}',
    '.vcf-error:empty{display:none}',
    '.vcf-check{display:flex;gap:.55rem;align-items:flex-start}',
    '.vcf-check input{margin-top:.25rem;width:1.1rem;height:1.1rem;flex:none;accent-color:var(--vcf-brand)}',
    '.vcf-check label{font-weight:400}',
    '.vcf-hint{margin:-.4rem 0 .9rem;font-size:.85rem;color:#4a4f57}',
    '.vcf-summary{margin:0 0 1rem;padding:.6rem .8rem;border:2px solid #b3261e;border-radius:6px;background:#fdf0ef}',
    '.vcf-summary:empty{display:none}',
    '.vcf-summary p{margin:0 0 .3rem;font-weight:650}',
    '.vcf-summary ul{margin:0;padding-left:1.2rem}',
    '.vcf-summary a{color:#8c1d18}',
    '.vcf-hp{position:absolute!important;left:-10000px!important;width:1px;height:1px;overflow:hidden}',
    '.vcf-submit{display:inline-block;padding:.65rem 1.3rem;border:0;border-radius:6px;background:var(--vcf-brand);color:var(--vcf-on-brand);font:inherit;font-weight:650;cursor:pointer}',
    '.vcf-submit[disabled]{opacity:.7;cursor:progress}',
    '.vcf-thanks{padding:.5rem 0}',
    '.vcf-thanks h2{margin:0 0 .5rem;font-size:1.2rem;color:var(--vcf-brand)}',
    '.vcf-thanks:focus{outline:none}',
    '.vcf-captcha{min-height:1px}',
    '.vcf-sr{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}',
  ].join('\n');

  var instances = 0;

  function h(tag, attrs, children) {
    var el = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (name) {
        var value = attrs[name];
        if (value === null || value === undefined || value === false) return;
        if (name === 'text') el.textContent = value;
        else if (name === 'className') el.className = value;
        else el.setAttribute(name, value === true ? '' : String(value));
      });
    }
    (children || []).forEach(function (child) {
      if (child) el.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    });
    return el;
  }

  function injectStyles() {
    if (document.getElementById(STYLE_ID)) return;
    var style = h('style', { id: STYLE_ID });
    style.textContent = CSS;
    (document.head || document.documentElement).appendChild(style);
  }

  /** Black or white text, whichever reads better on the brand colour (WCAG relative luminance). */
  function textOn(hex) {
    var m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex || '');
    if (!m) return '#fff';
    var lum = [m[1], m[2], m[3]]
      .map(function (c) {
        var v = parseInt(c, 16) / 255;
        return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
      })
      .reduce(function (sum, v, i) {
        return sum + v * [0.2126, 0.7152, 0.0722][i];
      }, 0);
    return 1.05 / (lum + 0.05) >= (lum + 0.05) / 0.05 ? '#fff' : '#111';
  }

  function countryName(code) {
    try {
      var names = new Intl.DisplayNames([navigator.language || 'en'], { type: 'region' });
      return names.of(code) || code;
    } catch {
      return code;
    }
  }

  /** An Idempotency-Key (letters, digits, `_ . : -`); crypto.getRandomValues also works on plain-http pages. */
  function newIdempotencyKey() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return (
      'vcf_' +
      Array.prototype.map
        .call(bytes, function (b) {
          return ('0' + b.toString(16)).slice(-2);
        })
        .join('')
    );
  }

  function length(value) {
    return Array.from(value).length;
  }

  /** Checks one text value against the server's rule for that property; returns a message or ''. */
  function checkText(rule, value) {
    if (!rule) return '';
    if (rule.minLength !== undefined && length(value) < rule.minLength)
      return rule.minLength === 1 ? 'This field is required.' : 'Use at least ' + rule.minLength + ' characters.';
    if (rule.maxLength !== undefined && length(value) > rule.maxLength)
      return 'Use at most ' + rule.maxLength + ' characters.';
    if (rule.pattern && !new RegExp(rule.pattern, 'u').test(value))
      return rule.patternMessage || 'This value has the wrong format.';
    return '';
  }

  function isCalendarDate(value) {
    var m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
    if (!m) return false;
    var date = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]));
    return date.getUTCFullYear() === +m[1] && date.getUTCMonth() === +m[2] - 1 && date.getUTCDate() === +m[3];
  }

  function loadCaptchaScript(provider) {
    var spec = CAPTCHA[provider];
    if (window[spec.global] && window[spec.global].render) return Promise.resolve(window[spec.global]);
    window.__vcfCaptcha = window.__vcfCaptcha || {};
    if (!window.__vcfCaptcha[provider]) {
      window.__vcfCaptcha[provider] = new Promise(function (resolve, reject) {
        var callback = '__vcfCaptchaLoaded_' + provider;
        window[callback] = function () {
          resolve(window[spec.global]);
        };
        var script = h('script', { src: spec.src + '?render=explicit&onload=' + callback, async: true, defer: true });
        script.onerror = function () {
          reject(new Error('The ' + provider + ' script could not be loaded'));
        };
        document.head.appendChild(script);
      });
    }
    return window.__vcfCaptcha[provider];
  }

  function Form(mountPoint, options) {
    this.n = ++instances;
    this.mountPoint = mountPoint;
    this.key = options.key;
    this.apiBase = options.apiBase.replace(/\/$/, '');
    this.title = options.title || 'Send us your enquiry';
    this.config = null;
    this.fields = {}; // name -> { input(s), error element, wrapper }
    this.captcha = { api: null, id: null, token: null };
    this.submitting = false;
    this.lastBody = null;
    this.idempotencyKey = null;
  }

  Form.prototype.id = function (name) {
    return 'vcf' + this.n + '-' + name.replace(/[^a-zA-Z0-9_-]/g, '-');
  };

  Form.prototype.start = function () {
    injectStyles();
    this.root = h('div', { className: 'vcf-root', 'aria-busy': 'true' }, [h('p', { text: 'Loading the form…' })]);
    this.mountPoint.appendChild(this.root);
    var url = this.apiBase + '/v1/widget/config?key=' + encodeURIComponent(this.key);
    return fetch(url, { method: 'GET', mode: 'cors', credentials: 'omit' })
      .then((response) => {
        return response.json().then((body) => {
          if (!response.ok) throw new Error((body && body.error) + ': ' + (body && body.message));
          return body;
        });
      })
      .then((config) => {
        this.config = config;
        this.render();
      })
      .catch((error) => {
        console.error(
          '[visa lead form] the form configuration could not be loaded:',
          error && error.message ? error.message : error,
        );
        this.root.removeAttribute('aria-busy');
        this.root.textContent = '';
        this.root.appendChild(
          h('p', { role: 'alert', text: 'Sorry, this form is unavailable right now. Please try again later.' }),
        );
      });
  };

  /** One labelled control with its help text and error slot. */
  Form.prototype.field = function (name, label, control, opts) {
    opts = opts || {};
    var errorId = this.id(name) + '-error';
    var helpId = opts.help ? this.id(name) + '-help' : null;
    control.id = this.id(name);
    if (!control.name) control.name = name;
    control.setAttribute('aria-describedby', [helpId, errorId].filter(Boolean).join(' '));
    if (opts.required) {
      control.setAttribute('aria-required', 'true');
      control.required = true;
    }
    var error = h('p', { className: 'vcf-error', id: errorId });
    var labelEl = h('label', { className: 'vcf-label', for: control.id }, [
      label,
      opts.required ? h('span', { className: 'vcf-req', 'aria-hidden': 'true', text: '*' }) : null,
    ]);
    var wrapper;
    if (opts.checkbox) {
      wrapper = h('div', { className: 'vcf-field' }, [
        h('div', { className: 'vcf-check' }, [control, labelEl]),
        opts.help ? h('p', { className: 'vcf-help', id: helpId, text: opts.help }) : null,
        error,
      ]);
    } else {
      wrapper = h('div', { className: 'vcf-field' }, [
        labelEl,
        control,
        opts.help ? h('p', { className: 'vcf-help', id: helpId, text: opts.help }) : null,
        error,
      ]);
    }
    this.fields[name] = {
      control: control,
      error: error,
      wrapper: wrapper,
      label: opts.summaryLabel || label,
      kind: opts.kind || 'text',
    };
    return wrapper;
  };

  Form.prototype.select = function (choices, placeholder) {
    var select = h('select', { className: 'vcf-input' }, [h('option', { value: '', text: placeholder })]);
    choices.forEach(function (c) {
      select.appendChild(h('option', { value: c.value, text: c.label }));
    });
    return select;
  };

  Form.prototype.render = function () {
    var config = this.config;
    var rules = RULES.fields;
    var brand = config.tenant.brand_color;
    if (brand) {
      this.root.style.setProperty('--vcf-brand', brand);
      this.root.style.setProperty('--vcf-on-brand', textOn(brand));
    }
    this.root.textContent = '';
    this.root.removeAttribute('aria-busy');
    var titleId = this.id('title');
    this.root.appendChild(
      h('div', { className: 'vcf-header' }, [
        config.tenant.logo_url
          ? h('img', { className: 'vcf-logo', src: config.tenant.logo_url, alt: config.tenant.name })
          : null,
        h('h2', { className: 'vcf-title', id: titleId, text: this.title }),
      ]),
    );
    if (config.test_mode)
      this.root.appendChild(
        h('p', {
          className: 'vcf-test',
          text: 'Test mode: enquiries sent from this form go to the sandbox of ' + config.tenant.name + '.',
        }),
      );

    var form = h('form', { novalidate: true, 'aria-labelledby': titleId });
    this.form = form;
    this.summary = h('div', { className: 'vcf-summary', role: 'alert', 'aria-live': 'assertive', tabindex: '-1' });
    form.appendChild(this.summary);
    var nameInput = h('input', {
      type: 'text',
      className: 'vcf-input',
      name: 'full_name',
      autocomplete: 'name',
      maxlength: rules.full_name && rules.full_name.maxLength,
    });
    form.appendChild(this.field('full_name', 'Full name', nameInput, { required: true }));
    form.appendChild(
      this.field(
        'email',
        'Email',
        h('input', { type: 'email', className: 'vcf-input', name: 'email', autocomplete: 'email', inputmode: 'email' }),
      ),
    );
    form.appendChild(
      this.field(
        'phone',
        'Phone',
        h('input', {
          type: 'tel',
          className: 'vcf-input',
          name: 'phone',
          autocomplete: 'tel',
          maxlength: rules.phone && rules.phone.maxLength,
        }),
      ),
    );
    form.appendChild(
      h('p', {
        className: 'vcf-hint',
        id: this.id('contact-hint'),
        text: 'Give us an email address or a phone number, or both.',
      }),
    );
    ['email', 'phone'].forEach((name) => {
      var c = this.fields[name].control;
      c.setAttribute('aria-describedby', this.id('contact-hint') + ' ' + c.getAttribute('aria-describedby'));
    });
    if (config.countries.length > 0) {
      var countries = config.countries.map((code) => {
        return { value: code, label: countryName(code) };
      });
      form.appendChild(
        this.field('country_interest', 'Country you want to go to', this.select(countries, 'Choose a country')),
      );
    }
    if (config.visa_types.length > 0) {
      var visas = config.visa_types.map((v) => {
        return { value: v, label: VISA_LABELS[v] || v };
      });
      form.appendChild(this.field('visa_type', 'Type of visa', this.select(visas, 'Choose a visa type')));
    }
    form.appendChild(
      this.field(
        'intake',
        'Planned intake',
        h('input', { type: 'month', className: 'vcf-input', name: 'intake', placeholder: 'YYYY-MM' }),
        { help: 'Month and year, for example 2027-09.' },
      ),
    );

    config.fields.forEach((def) => {
      if (!def.key) return;
      var name = 'custom_fields.' + def.key;
      var label = def.label || def.key;
      var opts = { required: Boolean(def.required), help: def.help_text || null, kind: def.type || 'text' };
      var control;
      if (def.type === 'dropdown') control = this.select(def.options || [], 'Choose…');
      else if (def.type === 'checkbox') {
        control = h('input', { type: 'checkbox' });
        opts.checkbox = true;
      } else if (def.type === 'number')
        control = h('input', { type: 'number', className: 'vcf-input', step: 'any', inputmode: 'decimal' });
      else if (def.type === 'date') control = h('input', { type: 'date', className: 'vcf-input' });
      else control = h('input', { type: 'text', className: 'vcf-input' });
      control.name = name;
      form.appendChild(this.field(name, label, control, opts));
    });

    form.appendChild(
      this.field(
        'message',
        'Message',
        h('textarea', {
          className: 'vcf-input',
          name: 'message',
          rows: '4',
          maxlength: rules.message && rules.message.maxLength,
        }),
      ),
    );

    // Honeypot: hidden from people and assistive technology, tempting to bots.
    form.appendChild(
      h('div', { className: 'vcf-hp', 'aria-hidden': 'true' }, [
        h('label', { for: this.id('website'), text: 'Website' }),
        h('input', { type: 'text', id: this.id('website'), name: 'website', tabindex: '-1', autocomplete: 'off' }),
      ]),
    );

    form.appendChild(
      this.field('consent', config.consent_text, h('input', { type: 'checkbox', name: 'consent' }), {
        required: true,
        checkbox: true,
        kind: 'checkbox',
        summaryLabel: 'Consent',
      }),
    );

    if (config.captcha.provider !== 'none' && CAPTCHA[config.captcha.provider]) {
      var box = h('div', { className: 'vcf-captcha', id: this.id('captcha') });
      var captchaError = h('p', { className: 'vcf-error', id: this.id('captcha') + '-error' });
      form.appendChild(h('div', { className: 'vcf-field' }, [box, captchaError]));
      this.fields.captcha_token = { control: box, error: captchaError, label: 'Verification', kind: 'captcha' };
      this.renderCaptcha(box);
    }

    this.button = h('button', { type: 'submit', className: 'vcf-submit', text: 'Send enquiry' });
    form.appendChild(this.button);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.submit();
    });
    this.root.appendChild(form);
  };

  Form.prototype.renderCaptcha = function (box) {
    var provider = this.config.captcha.provider;
    loadCaptchaScript(provider)
      .then((api) => {
        this.captcha.api = api;
        this.captcha.id = api.render(box, {
          sitekey: this.config.captcha.site_key,
          callback: (token) => {
            this.captcha.token = token;
            this.showError('captcha_token', '');
          },
          'expired-callback': () => {
            this.captcha.token = null;
          },
          'error-callback': () => {
            this.captcha.token = null;
          },
        });
      })
      .catch((error) => {
        console.error('[visa lead form]', error.message);
        this.showError('captcha_token', 'The verification could not be loaded. Please reload the page.');
      });
  };

  Form.prototype.resetCaptcha = function () {
    if (this.captcha.api && this.captcha.id !== null && this.captcha.api.reset) {
      try {
        this.captcha.api.reset(this.captcha.id);
      } catch {
        /* the provider refused to reset; the next submit asks for a new check */
      }
    }
    this.captcha.token = null;
  };

  Form.prototype.value = function (name) {
    var f = this.fields[name];
    if (!f) return undefined;
    if (f.control.type === 'checkbox') return f.control.checked;
    return f.control.value.trim();
  };

  /** Reads the form into a LeadCreate body and the problems the server would report, keyed like its `fields`. */
  Form.prototype.collect = function () {
    var rules = RULES.fields;
    var body = {};
    var errors = {};
    var fullName = this.value('full_name');
    body.full_name = fullName;
    var nameProblem = fullName === '' ? 'Enter your full name.' : checkText(rules.full_name, fullName);
    if (!nameProblem && new RegExp(RULES.linkPattern, 'i').test(fullName))
      nameProblem = 'Enter your name without a web address.';
    if (nameProblem) errors.full_name = nameProblem;

    var email = this.value('email');
    var phone = this.value('phone');
    if (email === '' && phone === '') {
      errors.email = 'Enter an email address or a phone number.';
      errors.phone = 'Enter a phone number or an email address.';
    }
    if (email !== '') {
      body.email = email;
      var emailProblem =
        checkText(rules.email, email) ||
        (new RegExp(RULES.emailPattern).test(email) ? '' : 'Enter a valid email address, like name@example.com.');
      if (emailProblem) errors.email = emailProblem;
    }
    if (phone !== '') {
      body.phone = phone;
      var phoneProblem =
        checkText(rules.phone, phone) || (/^[+0-9 ().-]+$/.test(phone) ? '' : 'Use digits, spaces and + ( ) - only.');
      if (phoneProblem) errors.phone = phoneProblem;
    }
    ['country_interest', 'visa_type'].forEach((name) => {
      var v = this.value(name);
      if (v) body[name] = v;
    });
    var intake = this.value('intake');
    if (intake) {
      body.intake = intake;
      var intakeProblem = checkText(
        Object.assign({ patternMessage: 'Enter the month as YYYY-MM, for example 2027-09.' }, rules.intake),
        intake,
      );
      if (intakeProblem) errors.intake = intakeProblem;
    }
    var message = this.value('message');
    if (message) {
      body.message = message;
      var messageProblem = checkText(rules.message, message);
      var links = message.match(new RegExp(RULES.linkPattern, 'gi'));
      if (!messageProblem && links && links.length > RULES.maxMessageLinks)
        messageProblem = 'Include at most ' + RULES.maxMessageLinks + ' links.';
      if (messageProblem) errors.message = messageProblem;
    }

    var custom = {};
    this.config.fields.forEach((def) => {
      if (!def.key) return;
      var name = 'custom_fields.' + def.key;
      var raw = this.value(name);
      if (def.type === 'checkbox') {
        if (raw) custom[def.key] = true;
        else if (def.required) errors[name] = 'Tick this box to continue.';
        return;
      }
      if (raw === '') {
        if (def.required) errors[name] = def.type === 'dropdown' ? 'Choose an option.' : 'This field is required.';
        return;
      }
      if (def.type === 'number') {
        var number = Number(raw);
        if (!isFinite(number)) errors[name] = 'Enter a number.';
        else custom[def.key] = number;
      } else if (def.type === 'date') {
        if (!isCalendarDate(raw)) errors[name] = 'Enter a date as YYYY-MM-DD.';
        else custom[def.key] = raw;
      } else if (def.type === 'dropdown') {
        if (
          !(def.options || []).some((o) => {
            return o.value === raw;
          })
        )
          errors[name] = 'Choose one of the options.';
        else custom[def.key] = raw;
      } else if (length(raw) > RULES.customTextMaxLength)
        errors[name] = 'Use at most ' + RULES.customTextMaxLength + ' characters.';
      else custom[def.key] = raw;
    });
    body.custom_fields = custom;

    body.consent = this.value('consent') === true;
    if (!body.consent) errors.consent = 'Please agree so that we can contact you.';

    if (this.fields.captcha_token) {
      if (this.captcha.token) body.captcha_token = this.captcha.token;
      else errors.captcha_token = 'Please complete the verification.';
    } else {
      // A public key must send a token; with no provider configured the service checks none.
      body.captcha_token = 'none';
    }
    body.website = this.form.elements.website.value;

    var page = window.location.href;
    if (/^https?:/.test(page) && length(page) <= ((rules.landing_page_url && rules.landing_page_url.maxLength) || 2000))
      body.landing_page_url = page;
    var params = new URL(page).searchParams;
    var utm = {};
    UTM_KEYS.forEach((k) => {
      var v = params.get('utm_' + k);
      if (v && length(v) <= RULES.utmMaxLength) utm[k] = v;
    });
    if (Object.keys(utm).length > 0) body.utm = utm;
    return { body: body, errors: errors };
  };

  Form.prototype.showError = function (name, message) {
    var f = this.fields[name];
    if (!f) return false;
    f.error.textContent = message;
    if (f.control.tagName !== 'DIV') {
      if (message) f.control.setAttribute('aria-invalid', 'true');
      else f.control.removeAttribute('aria-invalid');
    }
    return true;
  };

  /** Shows problems beside their fields and in the summary (an alert, so screen readers announce it). */
  Form.prototype.showErrors = function (errors, general) {
    Object.keys(this.fields).forEach((name) => {
      this.showError(name, '');
    });
    this.summary.textContent = '';
    var placed = [];
    var loose = general ? [general] : [];
    Object.keys(errors).forEach((name) => {
      if (this.showError(name, errors[name])) placed.push(name);
      else loose.push(errors[name]);
    });
    if (placed.length === 0 && loose.length === 0) return;
    var list = h('ul');
    placed.forEach((name) => {
      var f = this.fields[name];
      var link = h('a', { href: '#' + f.control.id, text: f.label });
      link.addEventListener('click', (event) => {
        event.preventDefault();
        f.control.focus();
      });
      list.appendChild(h('li', null, [link, ': ' + errors[name]]));
    });
    loose.forEach((text) => {
      list.appendChild(h('li', { text: text }));
    });
    var count = placed.length + loose.length;
    this.summary.appendChild(
      h('p', {
        text:
          placed.length > 0
            ? 'Please check ' + (count === 1 ? 'this field' : 'these ' + count + ' fields') + ':'
            : 'Your enquiry was not sent:',
      }),
    );
    this.summary.appendChild(list);
    var first = placed[0] && this.fields[placed[0]].control;
    if (first && first.tagName !== 'DIV') first.focus();
    else this.summary.focus();
  };

  Form.prototype.setBusy = function (busy) {
    this.submitting = busy;
    this.button.disabled = busy;
    this.button.textContent = busy ? 'Sending…' : 'Send enquiry';
    if (busy) this.form.setAttribute('aria-busy', 'true');
    else this.form.removeAttribute('aria-busy');
  };

  Form.prototype.submit = function () {
    if (this.submitting) return;
    var collected = this.collect();
    if (Object.keys(collected.errors).length > 0) {
      this.showErrors(collected.errors);
      return;
    }
    var json = JSON.stringify(collected.body);
    // The same content keeps its key, so a retry after a lost answer cannot create a second lead.
    if (json !== this.lastBody) {
      this.lastBody = json;
      this.idempotencyKey = newIdempotencyKey();
    }
    this.setBusy(true);
    fetch(this.apiBase + '/v1/leads', {
      method: 'POST',
      mode: 'cors',
      credentials: 'omit',
      headers: {
        Authorization: 'Bearer ' + this.key,
        'Content-Type': 'application/json',
        'Idempotency-Key': this.idempotencyKey,
      },
      body: json,
    })
      .then((response) => {
        return response.json().then(
          (body) => {
            return { status: response.status, body: body };
          },
          () => {
            return { status: response.status, body: null };
          },
        );
      })
      .then((result) => {
        this.setBusy(false);
        if (result.status === 200 || result.status === 201) return this.thanks(collected.body.full_name, result.body);
        this.serverRefused(result.status, result.body || {});
      })
      .catch((error) => {
        this.setBusy(false);
        console.error('[visa lead form] sending failed:', error && error.message ? error.message : error);
        this.showErrors({}, 'We could not reach the server. Check your connection and press “Send enquiry” again.');
      });
  };

  Form.prototype.serverRefused = function (status, body) {
    var code = body.error || 'http_' + status;
    // A refused answer is final for this content: a corrected form gets a new Idempotency-Key.
    this.lastBody = null;
    // The service checks the captcha after the fields, so a token it refused or used is replaced; others stay good.
    if (this.fields.captcha_token && ['validation_failed', 'consent_required', 'spam_detected'].indexOf(code) === -1)
      this.resetCaptcha();
    if (code === 'validation_failed' && body.fields) {
      var errors = {};
      Object.keys(body.fields).forEach(function (name) {
        var target =
          name === 'custom_fields' || name.indexOf('custom_fields.') === 0 || !/\./.test(name)
            ? name
            : name.split('.')[0];
        errors[target] = errors[target] || sentence(body.fields[name]);
      });
      return this.showErrors(errors);
    }
    if (code === 'consent_required') return this.showErrors({ consent: 'Please agree so that we can contact you.' });
    if (code === 'captcha_failed')
      return this.showErrors({ captcha_token: 'The verification failed. Please complete it again.' });
    console.error('[visa lead form] the server refused the enquiry:', code, body.message || '');
    if (status === 400 && body.message) return this.showErrors({}, sentence(body.message));
    this.showErrors({}, 'Sorry, we could not send your enquiry. Please try again later.');
  };

  function sentence(text) {
    var t = String(text || '').trim();
    if (!t) return 'This value is not accepted.';
    t = t.charAt(0).toUpperCase() + t.slice(1);
    return /[.!?]$/.test(t) ? t : t + '.';
  }

  Form.prototype.thanks = function (fullName, body) {
    var first = fullName.split(/\s+/)[0];
    var panel = h('div', { className: 'vcf-thanks', role: 'status', tabindex: '-1' }, [
      h('h2', { text: 'Thank you, ' + first + '!' }),
      h('p', { text: 'We have received your enquiry. ' + this.config.tenant.name + ' will contact you soon.' }),
    ]);
    this.form.replaceWith(panel);
    panel.focus();
    this.mountPoint.dispatchEvent(
      new CustomEvent('visa-lead-form:submitted', {
        bubbles: true,
        detail: { test_mode: Boolean(body && body.test_mode) },
      }),
    );
  };

  function mount(target, options) {
    var el = typeof target === 'string' ? document.querySelector(target) : target;
    if (!el) throw new Error('VisaLeadForm.mount: no element ' + target);
    if (!options || !options.key) throw new Error('VisaLeadForm.mount: options.key (a public key) is required');
    var form = new Form(el, { key: options.key, apiBase: options.apiBase || DEFAULT_BASE, title: options.title });
    form.start();
    return form;
  }

  var script = document.currentScript;
  var DEFAULT_BASE = script && script.src ? new URL(script.src).origin : window.location.origin;
  window.VisaLeadForm = { mount: mount };

  if (script && script.getAttribute('data-key')) {
    var options = {
      key: script.getAttribute('data-key'),
      apiBase: script.getAttribute('data-api-base') || DEFAULT_BASE,
      title: script.getAttribute('data-title'),
    };
    var selector = script.getAttribute('data-target');
    var place = function () {
      var target = selector ? document.querySelector(selector) : null;
      if (!target) {
        target = h('div', { className: 'vcf-mount' });
        script.parentNode.insertBefore(target, script.nextSibling);
      }
      mount(target, options);
    };
    if (selector && !document.querySelector(selector) && document.readyState === 'loading')
      document.addEventListener('DOMContentLoaded', place);
    else place();
  }
})();
